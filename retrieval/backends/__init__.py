"""Search backends: the ``SearchBackend`` protocol and its embedded and Elasticsearch versions."""

from collections.abc import Sequence
from typing import Protocol

from retrieval.audience import Audience
from retrieval.collections import Collection
from retrieval.embeddings import ProgressCallback, Vectors
from retrieval.passages import CollectionStats, Passage, SyncStats


class SearchBackend(Protocol):
    """Everything the graph and the indexer need from a search engine. All methods are async."""

    @property
    def name(self) -> str:
        """Short backend name for metrics: ``embedded`` or ``elasticsearch``."""
        ...

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
        """Top passages for ``query`` with scores, best first. ``broad`` relaxes term matching.
        ``audience``: only passages it may read are searched (``retrieval.audience``), inside the
        search itself; ``None`` searches every passage (the operator, an indexer).

        With embeddings, the search is by words (``query``) and by meaning (``meaning``, default
        ``query``: the question itself, embedded once for all its branches), and the word scores use
        the statistics of ``corpus`` (the collections whose results are merged with this one's;
        default: this one), so that scores from several collections rank together.

        Raises ``SearchUnavailableError`` or ``CollectionNotIndexedError``.
        """
        ...

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        """Best score per collection in one round trip, on one scale across them, of the passages
        ``audience`` may read; collections that fail are left out."""
        ...

    async def sync_collection(
        self,
        collection: Collection,
        passages: Sequence[Passage],
        *,
        progress: ProgressCallback | None = None,
    ) -> SyncStats:
        """Make the collection hold exactly ``passages`` (and their vectors, with embeddings);
        atomically where the engine can. ``progress`` is told how many passages were embedded.

        Raises ``IndexingError``; on failure the previous contents stay searchable.
        """
        ...

    async def passages_from_sources(self, collection: Collection, sources: Sequence[str]) -> list[Passage]:
        """Indexed passages that came from these source names (kept when a file fails to load)."""
        ...

    async def drop_collection(self, collection: Collection) -> None:
        """Remove a collection's passages and index entirely (throw-away evaluation indexes)."""
        ...

    async def stats(self, collection: Collection) -> CollectionStats | None:
        """Document and passage counts, or ``None`` when the collection was never indexed."""
        ...

    async def generations(self, collections: Sequence[Collection]) -> dict[str, str]:
        """Each indexed collection's index generation: a value that changes whenever a sync
        changes what the collection holds (passages added, removed or changed, another embedder),
        and only then; never-indexed collections are left out. In one round trip.

        Raises ``SearchUnavailableError``.
        """
        ...

    async def health(self) -> bool:
        """True when the engine answers."""
        ...

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        """Unit vectors of short texts by the embedder the search uses (``retrieval.embeddings``),
        for judging meaning beside words; ``None`` when it searches by words only."""
        ...

    async def close(self) -> None: ...


class DelegatingBackend:
    """A ``SearchBackend`` that hands every call to ``inner``: the base of wrappers that change one
    or two calls (latency recorded, evidence hidden, faults injected) and pass the rest through."""

    def __init__(self, inner: SearchBackend) -> None:
        self.inner = inner

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
        audience: Audience | None = None,
    ) -> list[Passage]:
        return await self.inner.search(
            collection, query, limit=limit, broad=broad, meaning=meaning, corpus=corpus, audience=audience
        )

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        return await self.inner.probe(collections, query, meaning=meaning, audience=audience)

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

    async def generations(self, collections: Sequence[Collection]) -> dict[str, str]:
        return await self.inner.generations(collections)

    async def health(self) -> bool:
        return await self.inner.health()

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        return await self.inner.meanings(texts)

    async def close(self) -> None:
        await self.inner.close()


class AudienceBackend(DelegatingBackend):
    """A ``SearchBackend`` whose every search and probe is for one audience (one question's asker,
    or a channel's people), whatever its caller asks: what the research graph is handed, so that
    no search of a question can reach passages its audience may not read."""

    def __init__(self, inner: SearchBackend, audience: Audience) -> None:
        super().__init__(inner)
        self.audience = audience

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
        return await self.inner.search(
            collection,
            query,
            limit=limit,
            broad=broad,
            meaning=meaning,
            corpus=corpus,
            audience=self._narrowed(audience),
        )

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        return await self.inner.probe(collections, query, meaning=meaning, audience=self._narrowed(audience))

    def _narrowed(self, asked: Audience | None) -> Audience:
        return self.audience if asked is None else Audience.together((self.audience, asked))
