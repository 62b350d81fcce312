"""Backends for tests and benchmarks: wrap a real backend and inject latency or failures."""

import asyncio
from collections.abc import Sequence

from retrieval.audience import Audience
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.collections import Collection
from retrieval.errors import SearchUnavailableError
from retrieval.passages import Passage


class FaultyBackend(DelegatingBackend):
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
        super().__init__(inner)
        self.delays = delays or {}
        self.default_delay = default_delay
        self.probe_delay = probe_delay
        self.failing = set(failing)
        self.searches: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
        audience: Audience | None = None,
    ) -> list[Passage]:
        self.searches.append((collection.name, query))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delays.get(collection.name, self.default_delay))
            if collection.name in self.failing:
                raise SearchUnavailableError(collection=collection.name, reason="ConnectionError")
            return await self.inner.search(
                collection, query, limit=limit, broad=broad, meaning=meaning, corpus=corpus, audience=audience
            )
        finally:
            self.in_flight -= 1

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.probe_delay)
            return await self.inner.probe(collections, query, meaning=meaning, audience=audience)
        finally:
            self.in_flight -= 1
