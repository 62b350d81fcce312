"""The embedded backend shared by several processes: ``confer index`` (or an evaluation) in one,
``confer serve`` in another, both on the same SQLite file."""

import asyncio
from pathlib import Path

import pytest

from retrieval.backends.embedded import DATABASE_NAME, EmbeddedBackend, build_embedded_backend
from retrieval.collections import CollectionsConfig
from retrieval.errors import CollectionNotIndexedError
from retrieval.ingest.pipeline import index_collection


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


async def test_quick_searches_run_on_one_thread_and_a_slow_collection_on_the_pool(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    people = sample_config.get("people")
    assert people is not None
    indexer = build_embedded_backend(tmp_path / "data")
    await index_collection(indexer, people, sample_config)
    await indexer.close()
    queries = ["parental leave", "holiday allowance", "sick days", "remote work", "expenses", "pension"]
    path = tmp_path / "data" / DATABASE_NAME

    quick = EmbeddedBackend(path=path, workers=4)
    try:
        found = await asyncio.gather(*(quick.search(people, q, limit=3) for q in queries))
        # Every search ran on the quick lane's one thread: one connection was opened.
        assert len(quick._connections) == 1
    finally:
        await quick.close()

    slow = EmbeddedBackend(path=path, workers=4, quick_search_seconds=0.0)
    try:
        first = await slow.search(people, queries[0], limit=3)  # unknown yet: the quick lane
        again = await asyncio.gather(*(slow.search(people, q, limit=3) for q in queries))
        # Found slow by its first search, the collection was searched on the pool's threads too.
        assert len(slow._connections) > 1
    finally:
        await slow.close()
    assert first == found[0] and again == found  # the lane changes where a search runs, not what it finds
