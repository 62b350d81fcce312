"""Backends for tests and benchmarks: wrap a real backend and inject latency or failures."""

import asyncio
from collections.abc import Sequence

from retrieval.backends import SearchBackend
from retrieval.collections import Collection
from retrieval.embeddings import ProgressCallback
from retrieval.errors import SearchUnavailableError
from retrieval.passages import CollectionStats, Passage, SyncStats


class FaultyBackend:
    """Delegates to ``inner``; ``delays`` add latency per collection, ``failing`` ones raise;
    ``probe_delay`` slows routing probes. ``in_flight`` counts searches and probes under way."""

    def __init__(
        self,
        inner: SearchBackend,
        *,
        delays: dict[str, float] | None = None,
        default_delay: float = 0.0,
        failing: Sequence[str] = (),
        probe_delay: float = 0.0,
    ) -> None:
        self.inner = inner
        self.delays = delays or {}
        self.default_delay = default_delay
        self.probe_delay = probe_delay
        self.failing = set(failing)
        self.searches: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def name(self) -> str:
        return self.inner.name

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
    ) -> list[Passage]:
        self.searches.append((collection.name, query))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delays.get(collection.name, self.default_delay))
            if collection.name in self.failing:
                raise SearchUnavailableError(collection=collection.name, reason="ConnectionError")
            return await self.inner.search(
                collection, query, limit=limit, broad=broad, meaning=meaning, corpus=corpus
            )
        finally:
            self.in_flight -= 1

    async def probe(
        self, collections: Sequence[Collection], query: str, *, meaning: str | None = None
    ) -> dict[str, float]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.probe_delay)
            return await self.inner.probe(collections, query, meaning=meaning)
        finally:
            self.in_flight -= 1

    async def sync_collection(
        self,
        collection: Collection,
        passages: Sequence[Passage],
        *,
        progress: ProgressCallback | None = None,
    ) -> SyncStats:
        return await self.inner.sync_collection(collection, passages, progress=progress)

    async def passages_from_sources(self, collection: Collection, sources: Sequence[str]) -> list[Passage]:
        return await self.inner.passages_from_sources(collection, sources)

    async def drop_collection(self, collection: Collection) -> None:
        await self.inner.drop_collection(collection)

    async def stats(self, collection: Collection) -> CollectionStats | None:
        return await self.inner.stats(collection)

    async def health(self) -> bool:
        return await self.inner.health()

    async def close(self) -> None:
        await self.inner.close()
