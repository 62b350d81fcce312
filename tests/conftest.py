"""Shared fixtures: sample collections, backends (embedded, and Elasticsearch through osmem or a
real cluster when ELASTICSEARCH_URL is set)."""

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from retrieval.backends import SearchBackend
from retrieval.backends.elastic import build_elasticsearch_backend
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import CollectionsConfig, load_collections
from tests.fakes.es_proxy import MediaTypeProxy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never inherit Confer settings from the machine they run on."""
    keep_es = os.environ.get("ELASTICSEARCH_URL")
    for name in list(os.environ):
        if name.startswith(("CONFER_", "SLACK_", "LLM_", "ELASTICSEARCH_", "CONNECTIONS__")) or name in (
            "REDIS_URL",
            "DATABASE_URL",
            "PORT",
        ):
            monkeypatch.delenv(name, raising=False)
    if keep_es:
        monkeypatch.setenv("CONFER_TEST_ELASTICSEARCH_URL", keep_es)
    # Search by words only, unless a test turns embeddings on: most tests pin what Confer answers
    # from BM25 (which embeddings off must keep exactly); tests of search by meaning set
    # CONFER_EMBEDDINGS themselves and share one vector cache (``embedding_settings``).
    monkeypatch.setenv("CONFER_EMBEDDINGS", "off")


@pytest.fixture(scope="session")
def vector_cache_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of passage vectors for the whole run: the samples are embedded once."""
    return tmp_path_factory.mktemp("vectors") / "embeddings.sqlite3"


@pytest.fixture
def embedding_settings(monkeypatch: pytest.MonkeyPatch, vector_cache_path: Path) -> None:
    """Confer's default: the local embedding model, with the run's shared vector cache."""
    monkeypatch.setenv("CONFER_EMBEDDINGS", "local")
    monkeypatch.setenv("CONFER_EMBEDDINGS_CACHE", str(vector_cache_path))


@pytest.fixture
def sample_dir(tmp_path: Path) -> Path:
    """A private copy of the repository's collections file and sample documents."""
    target = tmp_path / "kb"
    shutil.copytree(ROOT / "samples", target / "samples")
    shutil.copy(ROOT / "collections.yaml", target / "collections.yaml")
    return target


@pytest.fixture
def sample_config(sample_dir: Path) -> CollectionsConfig:
    return load_collections(sample_dir / "collections.yaml")


@pytest.fixture(scope="session")
def osmem_base() -> Iterator[object]:
    from osmem_server import OsmemServer

    server = OsmemServer.start(japanese=False)
    yield server
    server.close()
    for pipe in (server.process.stdin, server.process.stdout):  # the launcher leaves them open
        if pipe is not None:
            pipe.close()


@pytest.fixture
def elasticsearch_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A real cluster from ELASTICSEARCH_URL, else a fresh osmem clone behind the media-type proxy."""
    real = os.environ.get("CONFER_TEST_ELASTICSEARCH_URL")
    if real:
        yield real
        return
    server = request.getfixturevalue("osmem_base")
    clone = server.clone()
    with MediaTypeProxy(clone.url) as proxy:
        yield proxy.url
    clone.close()


@pytest.fixture(params=["embedded", "elasticsearch"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SearchBackend]:
    """Each backend contract test runs against both backends."""
    built: SearchBackend
    if request.param == "embedded":
        built = build_embedded_backend(tmp_path / "data")
    else:
        built = build_elasticsearch_backend(url=request.getfixturevalue("elasticsearch_url"))
    yield built
    await built.close()


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[SearchBackend]:
    built = build_embedded_backend(tmp_path / "data")
    yield built
    await built.close()


def unique_indexes(config: CollectionsConfig, tag: str) -> CollectionsConfig:
    """The same collections with index aliases no real cluster already uses."""
    collections = tuple(
        c.model_copy(update={"index": f"confer-test-{tag}-{c.name}"}) for c in config.collections
    )
    return config.model_copy(update={"collections": collections})


@pytest.fixture
def isolated_config(sample_config: CollectionsConfig, tmp_path: Path) -> CollectionsConfig:
    return unique_indexes(sample_config, str(abs(hash(tmp_path)) % 10**8))
