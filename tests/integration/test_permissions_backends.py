"""Who may read a passage, enforced inside the search: the embedded backend (SQLite FTS5) and the
Elasticsearch backend (against the fake cluster, which answers 400 to any filter it does not know),
by words alone and by words and meaning."""

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval.audience import EVERYONE, Audience
from retrieval.backends import AudienceBackend, SearchBackend
from retrieval.backends.elastic import build_elasticsearch_backend
from retrieval.backends.embedded import EmbeddedBackend, build_embedded_backend
from retrieval.collections import Collection
from retrieval.embeddings import ProgressCallback, Vectors
from retrieval.passages import Passage
from tests.fakes.elasticsearch import FakeElasticsearch
from tests.fakes.embeddings_api import bag_of_words

HANDBOOK = Collection(name="handbook", title="Handbook", sources=("x",), index="confer-test-perm-handbook")
OTHER = Collection(name="other", title="Other", sources=("x",), index="confer-test-perm-other")

ANA = Audience.person(["Ana@Example.com"])  # in the HR group, at example.com
BO = Audience.person(["bo@example.com"])  # in the HR group too
CY = Audience.person(["cy@partner.org"])  # in no group, at another domain


def _passage(pid: str, title: str, text: str, readers: tuple[str, ...] | None) -> Passage:
    return Passage(
        id=pid,
        collection="handbook",
        doc_id=pid,
        source=f"wiki/{pid}",
        title=title,
        text=text,
        readers=readers,
    )


PASSAGES = [
    _passage("p_public", "Travel", "Trains are booked in second class for trips under four hours.", None),
    _passage(
        "p_hr",
        "Salary bands",
        "Salary bands: engineers earn between 60 and 90 thousand euros a year.",
        ("ana@example.com", "bo@example.com"),
    ),
    _passage("p_everyone", "Salary reviews", "Salary reviews happen every March for everyone.", (EVERYONE,)),
    _passage(
        "p_domain",
        "Salary advance",
        "A salary advance of one month is possible once a year.",
        ("domain:example.com",),
    ),
]


class BagOfWords:
    """A tiny embedder: each word its own direction (``tests.fakes.embeddings_api.bag_of_words``)."""

    model = "bag-of-words"
    dimensions = 64

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        return np.asarray([bag_of_words(t, self.dimensions) for t in texts], dtype=np.float32)

    async def embed_query(self, text: str) -> Vectors:
        return np.asarray(bag_of_words(text, self.dimensions), dtype=np.float32)

    async def close(self) -> None:
        return None


@pytest.fixture
async def cluster() -> AsyncIterator[FakeElasticsearch]:
    fake = await FakeElasticsearch().start()
    yield fake
    assert not fake.refused, fake.refused  # every filter sent was one the fake checked
    await fake.stop()


@pytest.fixture(params=["embedded", "elasticsearch", "embedded+meaning", "elasticsearch+meaning"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, cluster: FakeElasticsearch
) -> AsyncIterator[SearchBackend]:
    kind = str(request.param)
    embedder = BagOfWords() if kind.endswith("+meaning") else None
    built: SearchBackend
    if kind.startswith("embedded"):
        built = build_embedded_backend(tmp_path / "data", embedder=embedder)
    else:
        built = build_elasticsearch_backend(url=cluster.url, embedder=embedder)
    await built.sync_collection(HANDBOOK, PASSAGES)
    yield built
    await built.close()


async def _ids(backend: SearchBackend, query: str, audience: Audience | None) -> set[str]:
    """The passages found; by meaning, every passage is someone's nearest, so all it may read."""
    found = await backend.search(HANDBOOK, query, limit=10, meaning=query, audience=audience)
    return {p.id for p in found}


async def _salary(backend: SearchBackend, audience: Audience | None) -> set[str]:
    return await _ids(backend, "salary", audience) & SALARY


SALARY = {"p_hr", "p_everyone", "p_domain"}


async def test_each_audience_searches_only_what_it_may_read(store: SearchBackend) -> None:
    assert await _salary(store, None) == SALARY  # the operator: everything
    assert await _salary(store, Audience.anyone()) == {"p_everyone"}
    assert await _salary(store, ANA) == SALARY  # named (case aside), and at the domain
    assert await _salary(store, CY) == {"p_everyone"}
    # A channel: only what every person in it may read.
    assert await _salary(store, Audience.together([ANA, CY])) == {"p_everyone"}
    assert await _salary(store, Audience.together([ANA, BO])) == SALARY
    # Passages without readers (files) stay everyone's.
    assert "p_public" in await _ids(store, "trains second class", Audience.anyone())


async def test_a_word_only_a_restricted_passage_holds_finds_nothing_for_others(store: SearchBackend) -> None:
    """Neither by words nor by meaning does a hidden passage come back, not even as the nearest."""
    assert await _ids(store, "engineers euros bands", CY) <= {"p_everyone", "p_public"}
    assert "p_hr" in await _ids(store, "engineers euros bands", ANA)


async def test_a_probe_scores_only_what_the_audience_may_read(store: SearchBackend) -> None:
    assert "handbook" in await store.probe(
        [HANDBOOK], "engineers euros", meaning="engineers euros", audience=ANA
    )
    hidden = await store.probe(
        [HANDBOOK], "engineers euros", meaning="engineers euros", audience=Audience.anyone()
    )
    shown = await store.probe([HANDBOOK], "engineers euros", meaning="engineers euros", audience=ANA)
    # Only the restricted passage holds the words: by words alone nothing is found for the others;
    # by meaning, only a lower score of what they may read.
    assert hidden.get("handbook", 0.0) < shown["handbook"]


async def test_an_audience_backend_narrows_every_search_whatever_its_caller_asks(
    store: SearchBackend,
) -> None:
    scoped = AudienceBackend(store, CY)
    found = await scoped.search(HANDBOOK, "salary", limit=10, meaning="salary")
    assert {p.id for p in found} & SALARY == {"p_everyone"}
    asked_wider = await scoped.search(
        HANDBOOK, "salary", limit=10, meaning="salary", audience=Audience.everything()
    )
    assert {p.id for p in asked_wider} & SALARY == {"p_everyone"}
    assert (await scoped.probe([HANDBOOK], "engineers euros")).get("handbook", 0.0) < (
        await store.probe([HANDBOOK], "engineers euros", audience=ANA)
    )["handbook"]


async def test_readers_that_change_rewrite_the_passage_and_its_filter(store: SearchBackend) -> None:
    opened = [
        p.model_copy(update={"readers": ("cy@partner.org",)}) if p.id == "p_hr" else p for p in PASSAGES
    ]
    stats = await store.sync_collection(HANDBOOK, opened)
    assert (stats.added, stats.removed) == (1, 1)  # the same text, under other readers
    assert "p_hr" in await _ids(store, "salary bands engineers", CY)
    assert "p_hr" not in await _ids(store, "salary bands engineers", ANA)
    again = await store.sync_collection(HANDBOOK, opened)
    assert (again.added, again.removed, again.unchanged) == (0, 0, len(PASSAGES))
    if isinstance(store, EmbeddedBackend):  # (the fake cluster scans with match_all only)
        # What a re-index keeps of a file that failed to load keeps its readers.
        kept = await store.passages_from_sources(HANDBOOK, ["wiki/p_hr"])
        assert [p.readers for p in kept] == [("cy@partner.org",)]


async def test_a_collection_without_readers_is_searched_as_before(store: SearchBackend) -> None:
    files = [
        _passage("f1", "Parking", "Visitors park in the north garage.", None).model_copy(
            update={"collection": "other"}
        )
    ]
    await store.sync_collection(OTHER, files)
    for audience in (None, Audience.anyone(), CY):
        found = await store.search(OTHER, "park garage", limit=5, meaning="park garage", audience=audience)
        assert [p.id for p in found] == ["f1"]
