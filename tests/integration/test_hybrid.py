"""Search by words and meaning: the embedded backend with embeddings, scores that rank across
collections, the index's embedder fingerprint, and failures of the embeddings endpoint."""

import json
import logging
import os
import socket
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from bot.terminal.cli import main
from retrieval.backends.embedded import EmbeddedBackend, build_embedded_backend
from retrieval.collections import Collection, CollectionsConfig, load_collections
from retrieval.embeddings import BACKGROUND_NICENESS, LocalEmbedder, ProgressCallback, VectorCache, Vectors
from retrieval.ingest.pipeline import index_collection
from tests.fakes.embeddings_api import FakeEmbeddingsAPI, bag_of_words


@pytest.fixture
async def hybrid(tmp_path: Path, vector_cache_path: Path) -> AsyncIterator[EmbeddedBackend]:
    backend = build_embedded_backend(
        tmp_path / "data", embedder=LocalEmbedder(), vector_cache=VectorCache(vector_cache_path)
    )
    yield backend
    await backend.close()


async def _index_all(backend: EmbeddedBackend, config: CollectionsConfig) -> None:
    for collection in config.collections:
        await index_collection(backend, collection, config)


# Employees' words, none of which the answering document uses for the thing asked.
MEANING_ONLY = [
    ("I left my yubikey in a taxi", "samples/security/passwords-and-mfa.md"),
    ("who do I wake up if the site dies at 3am", "samples/engineering/on-call.md"),
]


@pytest.mark.parametrize(("question", "document"), MEANING_ONLY)
async def test_a_question_in_other_words_finds_the_answering_document(
    hybrid: EmbeddedBackend, sample_config: CollectionsConfig, question: str, document: str
) -> None:
    await _index_all(hybrid, sample_config)
    found = []
    for collection in sample_config.collections:
        found += await hybrid.search(
            collection, question, limit=5, meaning=question, corpus=sample_config.collections
        )
    found.sort(key=lambda p: -p.score)
    assert document in [p.source for p in found[:5]]
    assert all(p.semantic is not None and p.lexical is not None for p in found)


async def test_word_scores_of_a_collection_equal_those_of_one_index_over_all(
    hybrid: EmbeddedBackend, sample_config: CollectionsConfig
) -> None:
    """With the corpus's statistics, a passage scores by words in its collection as it does in one
    index over every collection: the branches' results rank together."""
    await _index_all(hybrid, sample_config)
    everything = Collection(
        name="everything", title="All", sources=tuple(s for c in sample_config.collections for s in c.sources)
    )
    await index_collection(hybrid, everything, sample_config)
    question = "how many days of paid leave do new parents get"
    whole = {p.text: p.lexical for p in await hybrid.search(everything, question, limit=40)}
    compared = 0
    for collection in sample_config.collections:
        for passage in await hybrid.search(collection, question, limit=8, corpus=sample_config.collections):
            if passage.text in whole and passage.lexical:
                assert passage.lexical == pytest.approx(whole[passage.text], rel=1e-9)
                compared += 1
        alone = await hybrid.search(collection, question, limit=8)
        if collection.name == "security":
            # By its own statistics alone, a collection scores the same words otherwise.
            assert any(
                p.lexical and p.text in whole and p.lexical != pytest.approx(whole[p.text]) for p in alone
            )
    assert compared >= 5


async def test_the_probe_ranks_collections_on_one_scale(
    hybrid: EmbeddedBackend, sample_config: CollectionsConfig
) -> None:
    await _index_all(hybrid, sample_config)
    scores = await hybrid.probe(sample_config.collections, "I left my yubikey in a taxi")
    assert max(scores, key=lambda n: scores[n]) == "security"
    assert set(scores) == set(sample_config.names) and all(0.0 <= s <= 1.0 for s in scores.values())


class NamedEmbedder:
    """Bag-of-words vectors under a model name of the test's choosing; records what it embeds."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.dimensions = 32
        self.embedded: list[str] = []

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        self.embedded += texts
        return np.array([bag_of_words(t, 32) for t in texts], dtype=np.float32).reshape(len(texts), 32)

    async def embed_query(self, text: str) -> Vectors:
        return np.array(bag_of_words(text, 32), dtype=np.float32)

    async def close(self) -> None:
        pass


async def test_another_model_never_mixes_vectors_and_reindexing_replaces_them(
    tmp_path: Path, sample_config: CollectionsConfig, caplog: pytest.LogCaptureFixture
) -> None:
    people = sample_config.get("people")
    assert people is not None
    first = NamedEmbedder("test:a")
    backend = build_embedded_backend(tmp_path / "data", embedder=first)
    report = await index_collection(backend, people, sample_config)
    assert len(first.embedded) == report.passages
    await backend.close()

    second = NamedEmbedder("test:b")
    backend = build_embedded_backend(tmp_path / "data", embedder=second)
    with caplog.at_level(logging.WARNING):
        found = await backend.search(people, "parental leave", limit=3)
    assert found and all(p.semantic is None for p in found)  # by words only: no vectors of test:b
    assert "confer index" in caplog.text
    await index_collection(backend, people, sample_config)
    assert len(second.embedded) == report.passages  # every passage embedded with the new model
    found = await backend.search(people, "parental leave", limit=3)
    assert found and all(p.semantic is not None for p in found)
    await backend.close()


def _pool_niceness() -> set[int]:
    return {
        os.getpriority(os.PRIO_PROCESS, t.native_id or 0)
        for t in threading.enumerate()
        if t.name.startswith("confer-sqlite") and t.native_id
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are Linux's here")
async def test_with_embeddings_the_pool_searches_at_a_lower_priority_than_questions_are_embedded(
    tmp_path: Path, sample_config: CollectionsConfig
) -> None:
    """A search on the pool (a large collection's) gives way to a question's embedding for a CPU;
    with embeddings off, nothing is embedded and the pool runs as the rest of the process."""
    people = sample_config.get("people")
    assert people is not None
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    for embedder, niceness in ((None, own), (NamedEmbedder("test:a"), min(19, own + BACKGROUND_NICENESS))):
        backend = EmbeddedBackend(
            path=tmp_path / "index.sqlite3", embedder=embedder, quick_search_seconds=0.0
        )
        try:
            await index_collection(backend, people, sample_config)
            assert await backend.search(people, "parental leave", limit=3)  # on the pool
            assert _pool_niceness() == {niceness}
        finally:
            await backend.close()


async def test_indexing_again_embeds_only_new_or_changed_passages(
    tmp_path: Path, sample_dir: Path, sample_config: CollectionsConfig
) -> None:
    people = sample_config.get("people")
    assert people is not None
    embedder = NamedEmbedder("test:a")
    backend = build_embedded_backend(tmp_path / "data", embedder=embedder)
    await index_collection(backend, people, sample_config)
    embedder.embedded.clear()
    await index_collection(backend, people, sample_config)
    assert embedder.embedded == []
    (sample_dir / "samples/people/remote-work.md").write_text(
        "# Remote work\n\nWork from anywhere in the EU.\n"
    )
    await index_collection(backend, people, sample_config)
    assert embedder.embedded == ["Remote work\nWork from anywhere in the EU."]
    await backend.close()


@pytest.fixture
def kb(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample_dir)
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    return sample_dir


def test_an_unreachable_endpoint_fails_index_with_one_line_naming_the_setting(
    kb: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CONFER_EMBEDDINGS", "endpoint")
    monkeypatch.setenv("EMBEDDINGS_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("EMBEDDINGS_MODEL", "text-embedding-3-small")
    assert main(["index", "people"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "EMBEDDINGS_BASE_URL" in err[0] and "people" in err[0]


async def test_an_endpoint_down_at_question_time_answers_by_words_with_a_log_and_a_metric(
    kb: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.metrics import build_metrics
    from bot.settings import load_settings
    from bot.wiring import build_service

    api = await FakeEmbeddingsAPI().start()
    monkeypatch.setenv("CONFER_EMBEDDINGS", "endpoint")
    monkeypatch.setenv("EMBEDDINGS_BASE_URL", api.url)
    monkeypatch.setenv("EMBEDDINGS_MODEL", "fake")
    metrics = build_metrics()
    service = build_service(load_settings(env_file=None), metrics=metrics)
    try:
        for collection in service.config.collections:
            await index_collection(service.backend, collection, service.config)
        api.fail = 503
        with caplog.at_level(logging.WARNING):
            answer = await service.answer(service.make_question("How long is parental leave?"), surface="cli")
    finally:
        await service.backend.close()
        await api.stop()
    assert answer.found and "20 weeks" in " ".join(s.text for sec in answer.sections for s in sec.sentences)
    assert "searching by words only" in caplog.text
    failures = metrics.registry.get_sample_value("confer_embedding_failures_total", {})
    assert failures is not None and failures >= 1


def test_index_and_ask_with_the_default_local_embeddings(
    kb: Path, embedding_settings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Confer as a new user runs it: embeddings on by default, nothing downloaded, every passage of
    every collection stored with its vector, and questions answered."""
    assert main(["index"]) == 0
    capsys.readouterr()
    with sqlite3.connect(kb / ".confer/index.sqlite3") as db:
        missing = db.execute(
            "SELECT count(*) FROM passages AS p LEFT JOIN vectors AS v ON v.rowid = p.rowid "
            "WHERE v.rowid IS NULL"
        ).fetchone()[0]
        embedders = {row[0] for row in db.execute("SELECT embedder FROM collections")}
    assert missing == 0 and embedders == {"local:all-MiniLM-L6-v2/384"}
    assert main(["ask", "How long is parental leave?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert "20 weeks" in payload["answer"]


def test_a_question_in_the_askers_words_is_answered_and_one_the_documents_do_not_answer_is_not(
    kb: Path, embedding_settings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "vacation" is written nowhere (the policy says "paid time off … public holidays"), nor are
    "minimum" and "length": read by meaning they are answered. A question about what no document
    holds stays "not found"."""
    assert main(["index"]) == 0
    capsys.readouterr()
    assert main(["ask", "how many vacation days do we get a year?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["found"] is True and "27 days" in payload["answer"]
    # No passage writes "minimum" or "length": the sentence that means it answers, from its policy.
    assert main(["ask", "whats the minimum password length", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["found"] is True and "at least 14 characters" in payload["answer"]
    assert {c["collection"] for c in payload["citations"]} == {"security"}
    assert main(["ask", "What is the dress code in the Berlin office?", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["found"] is False


async def test_an_endpoint_without_configured_dimensions_keeps_its_vectors_across_processes(
    tmp_path: Path, sample_config: CollectionsConfig
) -> None:
    """A second `confer index` whose vectors all come from the cache (the endpoint is never asked,
    so its dimensions are not known yet), then a new process: the collection is still searched by
    meaning, not taken for another model's index."""
    from retrieval.embeddings import EndpointEmbedder

    people = sample_config.get("people")
    assert people is not None
    api = await FakeEmbeddingsAPI().start()
    cache = tmp_path / "vectors.sqlite3"

    def backend() -> EmbeddedBackend:
        embedder = EndpointEmbedder(base_url=api.url, api_key="k", model="fake")
        return build_embedded_backend(tmp_path / "data", embedder=embedder, vector_cache=VectorCache(cache))

    try:
        for _ in range(2):  # indexed, then indexed again by a new process from the cache alone
            first = backend()
            await index_collection(first, people, sample_config)
            await first.close()
        asked = len(api.calls)
        later = backend()
        found = await later.search(people, "parental leave", limit=3)
        await later.close()
    finally:
        await api.stop()
    assert found and all(p.semantic is not None for p in found)
    assert len(api.calls) == asked + 1  # the question only: no passage embedded again


async def test_a_passage_edited_under_the_same_id_is_searched_by_its_new_meaning(
    hybrid: EmbeddedBackend, tmp_path: Path, vector_cache_path: Path
) -> None:
    """A JSONL line keeps its id when its text is edited: its vector must be the new text's."""
    folder = tmp_path / "kb-jsonl"
    folder.mkdir()
    lines = folder / "faq.jsonl"
    (folder / "collections.yaml").write_text(
        "collections:\n  - name: faq\n    title: FAQ\n    description: Office questions.\n"
        "    sources: [faq.jsonl]\n",
        encoding="utf-8",
    )
    config = load_collections(folder / "collections.yaml")
    [faq] = config.collections
    badge = '{"id": "faq-2", "title": "Badges", "text": "Badges are printed at the front desk."}\n'
    lines.write_text(
        '{"id": "faq-1", "title": "Parking", "text": "Visitors park in the north garage."}\n' + badge
    )
    await index_collection(hybrid, faq, config)
    lines.write_text(
        '{"id": "faq-1", "title": "Lunch", "text": "The cafeteria serves hot meals at noon."}\n' + badge
    )
    await index_collection(hybrid, faq, config)

    fresh = build_embedded_backend(
        tmp_path / "fresh", embedder=LocalEmbedder(), vector_cache=VectorCache(vector_cache_path)
    )
    try:
        await index_collection(fresh, faq, config)
        question = "where can I get food in the middle of the day"
        edited, written = [
            {p.id: p.semantic for p in await b.search(faq, question, limit=2, meaning=question, corpus=[faq])}
            for b in (hybrid, fresh)
        ]
    finally:
        await fresh.close()
    assert edited["faq-1"] == pytest.approx(written["faq-1"])
