"""The embedded backend shared by several processes: ``confer index`` (or an evaluation) in one,
``confer serve`` in another, both on the same SQLite file."""

import sqlite3
from pathlib import Path

import pytest

from retrieval import language, text
from retrieval.analysis import analyse
from retrieval.backends.embedded import DATABASE_NAME, build_embedded_backend
from retrieval.collections import CollectionsConfig
from retrieval.errors import CollectionNotIndexedError
from retrieval.ingest.pipeline import index_collection
from retrieval.language import stem_tuple_in
from retrieval.text import sentence_analysis, stems


async def test_a_collection_indexed_or_dropped_elsewhere_is_seen_by_a_running_backend(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    people = sample_config.get("people")
    assert people is not None
    serving = build_embedded_backend(tmp_path / "data")
    indexer = build_embedded_backend(tmp_path / "data")
    try:
        with pytest.raises(CollectionNotIndexedError):
            await serving.search(people, "parental leave", limit=3)
        await index_collection(indexer, people, sample_config)
        hits = await serving.search(people, "parental leave", limit=3)
        assert hits and "parental" in hits[0].text.lower()
        assert set(await serving.probe([people], "parental leave")) == {"people"}

        await indexer.drop_collection(people)
        with pytest.raises(CollectionNotIndexedError):
            await serving.search(people, "parental leave", limit=3)
        assert await serving.probe([people], "parental leave") == {}
        assert await serving.stats(people) is None

        await index_collection(indexer, people, sample_config)
        assert await serving.search(people, "parental leave", limit=3)
        assert set(await serving.probe([people], "parental leave")) == {"people"}
    finally:
        await serving.close()
        await indexer.close()


async def test_a_search_hands_over_the_analysis_stored_when_the_passage_was_indexed(
    sample_config: CollectionsConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    people = sample_config.get("people")
    assert people is not None
    backend = build_embedded_backend(tmp_path / "data")
    try:
        await index_collection(backend, people, sample_config)
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
    finally:
        await backend.close()


async def test_an_index_from_before_stored_analyses_is_read_and_analysed_at_its_next_sync(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    people = sample_config.get("people")
    assert people is not None
    data = tmp_path / "data"
    backend = build_embedded_backend(data)
    try:
        await index_collection(backend, people, sample_config)
    finally:
        await backend.close()
    # The file as an older Confer wrote it: no analysis column.
    with sqlite3.connect(data / DATABASE_NAME) as db:
        db.execute("ALTER TABLE passages DROP COLUMN analysis")
    older = build_embedded_backend(data)
    try:
        text.forget_texts()
        hits = await older.search(people, "parental leave", limit=3)
        assert hits and "parental" in hits[0].text.lower()
        with sqlite3.connect(data / DATABASE_NAME) as db:
            assert db.execute("SELECT COUNT(*) FROM passages WHERE analysis IS NULL").fetchone()[0] > 0
        stats = await index_collection(older, people, sample_config)
        assert stats.added == 0 and stats.removed == 0
        with sqlite3.connect(data / DATABASE_NAME) as db:
            rows = db.execute("SELECT title, text, analysis FROM passages").fetchall()
        assert rows and all(stored == analyse(title, body) for title, body, stored in rows)
    finally:
        await older.close()
