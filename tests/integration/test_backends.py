"""The SearchBackend contract, run against the embedded backend and Elasticsearch alike."""

import asyncio
import itertools
from pathlib import Path

import pytest
from elasticsearch import AsyncElasticsearch

from retrieval import language, text
from retrieval.analysis import analyse, fingerprint
from retrieval.backends import SearchBackend, elastic
from retrieval.backends.elastic import build_elasticsearch_backend
from retrieval.collections import CollectionsConfig, load_collections
from retrieval.errors import CollectionNotIndexedError
from retrieval.ingest.pipeline import index_collection
from retrieval.language import stem_tuple_in
from retrieval.passages import TEXT_FORMAT
from retrieval.text import sentence_analysis, stems
from tests.conftest import unique_indexes
from tests.fakes.pdf import write_pdf


async def _index_all(backend: SearchBackend, config: CollectionsConfig) -> None:
    for collection in config.collections:
        await index_collection(backend, collection, config)


async def test_backend_search_finds_relevant_passage_with_score(
    backend: SearchBackend, isolated_config: CollectionsConfig
) -> None:
    await _index_all(backend, isolated_config)
    product = isolated_config.get("product")
    assert product is not None
    passages = await backend.search(product, "rate limit for Growth accounts requests per second", limit=5)
    assert passages, "expected hits"
    assert passages[0].source.endswith("rate-limits.md")
    assert passages[0].collection == "product"
    assert all(a.score >= b.score for a, b in itertools.pairwise(passages))
    assert "50 requests per second" in passages[0].text


async def test_backend_probe_scores_every_matching_collection_in_one_call(
    backend: SearchBackend, isolated_config: CollectionsConfig
) -> None:
    await _index_all(backend, isolated_config)
    scores = await backend.probe(list(isolated_config.collections), "parental leave weeks")
    assert set(scores) <= set(isolated_config.names)
    assert max(scores, key=lambda name: scores[name]) == "people"


async def test_backend_reindex_is_idempotent_and_removes_deleted_files(
    backend: SearchBackend, isolated_config: CollectionsConfig, sample_dir: Path
) -> None:
    security = isolated_config.get("security")
    assert security is not None
    first = await index_collection(backend, security, isolated_config)
    again = await index_collection(backend, security, isolated_config)
    assert first.added == first.passages > 0
    assert (again.added, again.removed, again.unchanged) == (0, 0, first.passages)

    (sample_dir / "samples/security/vendor-review.md").unlink()
    after = await index_collection(backend, security, isolated_config)
    assert after.removed > 0 and after.added == 0
    hits = await backend.search(security, "vendor security review SOC 2", limit=10)
    assert all(not p.source.endswith("vendor-review.md") for p in hits)
    stats = await backend.stats(security)
    assert stats is not None and stats.passages == after.passages


async def test_backend_writes_anew_a_passage_whose_content_changed_under_the_same_id(
    backend: SearchBackend, tmp_path: Path
) -> None:
    """A JSONL line keeps the id its file gives when its text is edited (and a chunk's id does not
    cover its document's title): a re-index must not keep serving the old content."""
    folder = tmp_path / "kb-jsonl"
    folder.mkdir()
    lines = folder / "faq.jsonl"
    lines.write_text(
        '{"id": "faq-1", "title": "Parking", "text": "Visitors park in the north garage."}\n'
        '{"id": "faq-2", "title": "Badges", "text": "Badges are printed at the front desk."}\n',
        encoding="utf-8",
    )
    (folder / "collections.yaml").write_text(
        "collections:\n  - name: faq\n    title: FAQ\n    description: Office questions.\n"
        "    sources: [faq.jsonl]\n",
        encoding="utf-8",
    )
    config = unique_indexes(load_collections(folder / "collections.yaml"), str(abs(hash(tmp_path)) % 10**8))
    [faq] = config.collections
    first = await index_collection(backend, faq, config)
    assert (first.added, first.removed, first.unchanged) == (2, 0, 0)

    lines.write_text(
        '{"id": "faq-1", "title": "Visitor parking", "text": "Visitors now park in the south garage."}\n'
        '{"id": "faq-2", "title": "Badges", "text": "Badges are printed at the front desk."}\n',
        encoding="utf-8",
    )
    edited = await index_collection(backend, faq, config)
    assert (edited.added, edited.removed, edited.unchanged) == (1, 1, 1)
    [hit] = await backend.search(faq, "where do visitors park garage", limit=1)
    assert (hit.id, hit.title, hit.text) == (
        "faq-1",
        "Visitor parking",
        "Visitors now park in the south garage.",
    )
    again = await index_collection(backend, faq, config)
    assert (again.added, again.removed, again.unchanged) == (0, 0, 2)
    stats = await backend.stats(faq)
    assert stats is not None and stats.passages == 2


async def test_backend_keeps_passages_of_a_file_that_became_unreadable(
    backend: SearchBackend, isolated_config: CollectionsConfig, sample_dir: Path
) -> None:
    people = isolated_config.get("people")
    assert people is not None
    pdf = sample_dir / "samples/people/parental-leave.pdf"
    first = await index_collection(backend, people, isolated_config)
    pdf.write_bytes(b"%PDF-1.4 truncated garbage")
    report = await index_collection(backend, people, isolated_config)
    assert [f.path.name for f in report.failures] == ["parental-leave.pdf"]
    assert report.passages == first.passages and report.removed == 0
    hits = await backend.search(people, "parental leave weeks", limit=3)
    assert hits and hits[0].source.endswith("parental-leave.pdf")


async def test_backend_reports_collection_never_indexed(
    backend: SearchBackend, isolated_config: CollectionsConfig
) -> None:
    engineering = isolated_config.get("engineering")
    assert engineering is not None
    with pytest.raises(CollectionNotIndexedError):
        await backend.search(engineering, "deploy", limit=3)
    assert await backend.stats(engineering) is None
    assert await backend.health()


async def test_backend_serves_readers_while_a_collection_is_rewritten(
    backend: SearchBackend, isolated_config: CollectionsConfig, sample_dir: Path
) -> None:
    product = isolated_config.get("product")
    assert product is not None
    await index_collection(backend, product, isolated_config)
    write_pdf(sample_dir / "samples/product/pricing.pdf", "Pricing", ["Starter costs 49 euros per month."])

    async def reader() -> int:
        counts = []
        for _ in range(10):
            counts.append(len(await backend.search(product, "webhook retries signature", limit=5)))
        return min(counts)

    results = await asyncio.gather(reader(), reader(), index_collection(backend, product, isolated_config))
    assert results[0] > 0 and results[1] > 0  # never an empty, half-written collection
    hits = await backend.search(product, "Starter pricing euros per month", limit=3)
    assert any(p.source.endswith("pricing.pdf") for p in hits)


async def test_backend_broad_search_finds_partial_words(
    backend: SearchBackend, isolated_config: CollectionsConfig
) -> None:
    await _index_all(backend, isolated_config)
    product = isolated_config.get("product")
    assert product is not None
    assert await backend.search(product, "webhoo", limit=3) == []
    assert await backend.search(product, "webhoo", limit=3, broad=True)


async def test_backend_search_hands_over_the_analysis_stored_when_the_passage_was_indexed(
    backend: SearchBackend, isolated_config: CollectionsConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    people = isolated_config.get("people")
    assert people is not None
    await index_collection(backend, people, isolated_config)
    text.forget_texts()
    language.forget_texts()
    hits = await backend.search(people, "parental leave", limit=3)
    assert hits

    def analysed_again(*args: object) -> None:
        raise AssertionError("a retrieved passage was analysed again")

    monkeypatch.setattr(text, "_split", analysed_again)
    monkeypatch.setattr(text, "term_stems", analysed_again)
    monkeypatch.setattr(language, "content_stems", analysed_again)
    for hit in hits:
        assert sentence_analysis(hit.text)[0]
        assert stems(hit.title) and stem_tuple_in(hit.text)


async def test_an_elasticsearch_index_of_an_older_text_format_is_rebuilt_and_says_so(
    elasticsearch_url: str, isolated_config: CollectionsConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    people = isolated_config.get("people")
    assert people is not None
    backend = build_elasticsearch_backend(url=elasticsearch_url)
    try:
        with monkeypatch.context() as older:
            older.setattr(elastic, "TEXT_FORMAT", TEXT_FORMAT - 1)
            await index_collection(backend, people, isolated_config)
        again = await index_collection(backend, people, isolated_config)
        assert again.earlier_format == TEXT_FORMAT - 1
        assert (await index_collection(backend, people, isolated_config)).earlier_format is None
    finally:
        await backend.close()


async def test_an_elasticsearch_index_written_under_other_analysis_rules_is_written_anew(
    elasticsearch_url: str, isolated_config: CollectionsConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its passages unchanged, the collection's next sync still writes a fresh index, whose
    mapping records the current rules (and whose passages carry analyses made under them)."""
    people = isolated_config.get("people")
    assert people is not None
    backend = build_elasticsearch_backend(url=elasticsearch_url)
    client = AsyncElasticsearch(elasticsearch_url)  # reads the alias as any reader would
    try:
        with monkeypatch.context() as older:
            older.setattr(elastic, "fingerprint", lambda: "older-rules")
            first = await index_collection(backend, people, isolated_config)
        (before,) = (await client.indices.get_alias(name=people.alias)).body
        again = await index_collection(backend, people, isolated_config)
        assert (again.added, again.removed, again.unchanged) == (0, 0, first.passages)
        mappings = (await client.indices.get_mapping(index=people.alias)).body
        (after,) = mappings
        assert after != before
        assert mappings[after]["mappings"]["_meta"]["analysis"] == fingerprint()
        hits = (await client.search(index=people.alias, size=100))["hits"]["hits"]
        assert len(hits) == first.passages
        assert all(
            h["_source"]["analysis"] == analyse(h["_source"]["title"], h["_source"]["text"]) for h in hits
        )
        # Written under the current rules: a further sync changes nothing.
        await index_collection(backend, people, isolated_config)
        assert list((await client.indices.get_alias(name=people.alias)).body) == [after]
    finally:
        await client.close()
        await backend.close()


async def test_backend_generation_changes_only_when_a_sync_changes_the_collection(
    backend: SearchBackend, isolated_config: CollectionsConfig, sample_dir: Path
) -> None:
    security, people = isolated_config.get("security"), isolated_config.get("people")
    assert security is not None and people is not None
    assert await backend.generations([security, people]) == {}  # never indexed: none
    await index_collection(backend, security, isolated_config)
    await index_collection(backend, people, isolated_config)
    first = await backend.generations([security, people])
    assert set(first) == {"security", "people"}
    await index_collection(backend, security, isolated_config)  # nothing changed
    assert await backend.generations([security, people]) == first
    (sample_dir / "samples" / "security" / "new-policy.md").write_text("# Badges\n\nWear your badge.\n")
    await index_collection(backend, security, isolated_config)
    after = await backend.generations([security, people])
    assert after["security"] != first["security"] and after["people"] == first["people"]
