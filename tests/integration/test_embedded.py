"""The embedded backend shared by several processes: ``confer index`` (or an evaluation) in one,
``confer serve`` in another, both on the same SQLite file."""

from pathlib import Path

import pytest

from retrieval.backends.embedded import build_embedded_backend
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
