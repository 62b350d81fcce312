"""Elasticsearch backend: one concrete index per collection behind an alias.

A change to a collection is written into a fresh concrete index and the alias is swapped in one
``_aliases`` call, so readers never see a half-written collection and a failed write leaves the old
index live. Routing probes go out as one ``_msearch``.

Each passage is stored with its text analysis (``retrieval.analysis``), in a field Elasticsearch
keeps in ``_source`` without parsing it; a search hands it to the text caches with the hit. The
index's ``_meta`` records the analysis rules it was written with: a collection indexed before
analyses were stored, or under other rules, is written anew at its next sync even when its
passages are unchanged.

With an embedder, each passage also stores its vector (a ``dense_vector``, cosine), and the
mapping's ``_meta`` records the embedder (model and dimensions): an index of another embedder is
written anew at the next sync, and searched by words only until then. A search is then two
searches in one ``_msearch``: BM25 over every collection of the corpus with
``dfs_query_then_fetch`` (the corpus's statistics, filtered to this collection, so that scores
of several collections rank together) and kNN on this collection; their hits are scored both ways
and fused in the client (``retrieval.scoring.fuse``: the combination measured, and Elasticsearch's
own ``rrf`` retriever needs a paid licence). A cluster without ``dense_vector`` (OpenSearch, and the
osmem test server) fails ``confer index`` with embeddings on, naming the setting.

Who may read a passage (``retrieval.audience``) is its ``readers`` keyword field, absent for
everyone's. A search for an audience filters in the query itself (BM25's ``bool`` filter and kNN's
pre-filter, so hidden passages are neither scored nor among the k nearest): a passage without the
field, or whose readers name one of each person's principals (a ``terms`` query per person).
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-terms-query.html
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-exists-query.html
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/knn-search.html#knn-search-filter-example
"""

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np
from elastic_transport import TransportError
from elasticsearch import AsyncElasticsearch, helpers
from elasticsearch import exceptions as es_exceptions

from retrieval.analysis import analyse, fingerprint, offer
from retrieval.audience import Audience
from retrieval.collections import Collection
from retrieval.embeddings import (
    Embedder,
    ProgressCallback,
    VectorCache,
    Vectors,
    embed_with_cache,
    embedder_key,
    meanings,
    passage_text,
    query_vector,
    recorded_by,
)
from retrieval.errors import (
    CollectionNotIndexedError,
    EmbeddingError,
    IndexingError,
    SearchUnavailableError,
)
from retrieval.passages import TEXT_FORMAT, CollectionStats, Passage, SyncStats, digest_of
from retrieval.scoring import best_by_collection, fuse

logger = logging.getLogger(__name__)

SEARCH_FIELDS = ["title^2", "text"]
_SOURCE_FIELDS = ["id", "doc_id", "source", "title", "url", "text", "analysis"]
# Read back only where a collection is rewritten from what it holds (``passages_from_sources``).
_STORED_FIELDS = [*_SOURCE_FIELDS, "readers"]
# kNN looks at this many candidates per shard for each hit it returns (Elasticsearch's advice: more
# than k, for recall).
_KNN_CANDIDATES = 10
_FAILURES = (es_exceptions.ApiError, TransportError)

INDEX_SETTINGS: dict[str, Any] = {
    "number_of_shards": 1,
    "analysis": {"analyzer": {"default": {"type": "english"}}},
}
INDEX_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": {"type": "keyword"},
        "collection": {"type": "keyword"},
        "doc_id": {"type": "keyword"},
        "source": {"type": "keyword"},
        "url": {"type": "keyword", "index": False},
        "title": {"type": "text", "analyzer": "english"},
        "text": {"type": "text", "analyzer": "english"},
        # The passage's analysis (a JSON string): kept in _source, neither parsed nor indexed.
        "analysis": {"type": "object", "enabled": False},
        # What a sync compares (``retrieval.passages.content_digest``): kept in _source only.
        "digest": {"type": "keyword", "index": False, "doc_values": False},
        # Who may read the passage at its source; absent: everyone who may search the collection.
        "readers": {"type": "keyword"},
    },
}


def index_mappings(embedder: Embedder | None = None, dimensions: int = 0) -> dict[str, Any]:
    """``INDEX_MAPPINGS`` with the analysis rules' fingerprint (and the embedder) in ``_meta``, and
    a vector field with an embedder."""
    mappings: dict[str, Any] = {
        **INDEX_MAPPINGS,
        "_meta": {"analysis": fingerprint(), "text_format": TEXT_FORMAT},
    }
    if embedder is not None:
        properties = dict(mappings["properties"])
        properties["vector"] = {
            "type": "dense_vector",
            "dims": dimensions,
            "index": True,
            "similarity": "cosine",
        }
        mappings["properties"] = properties
        mappings["_meta"]["embedder"] = embedder_key(embedder, dimensions)
    return mappings


def _match(query: str, *, broad: bool) -> dict[str, Any]:
    clause: dict[str, Any] = {"query": query, "fields": SEARCH_FIELDS, "type": "best_fields"}
    if broad:
        clause["fuzziness"] = "AUTO"
    return {"multi_match": clause}


def readable_by(audience: Audience | None) -> dict[str, Any] | None:
    """The filter of the passages ``audience`` may read: without readers, or whose readers name one
    of each person's principals; ``None`` for the operator (no filter)."""
    constraints = None if audience is None else audience.constraints
    if constraints is None:
        return None
    everyone = {"bool": {"must_not": [{"exists": {"field": "readers"}}]}}
    named = {"bool": {"filter": [{"terms": {"readers": list(each)}} for each in constraints]}}
    return {"bool": {"should": [everyone, named], "minimum_should_match": 1}}


def _filtered(query: dict[str, Any], *filters: dict[str, Any] | None) -> dict[str, Any]:
    """``query`` with these filters (each ``None`` left out); as it was without any."""
    kept = [f for f in filters if f is not None]
    if not kept:
        return query
    return {"bool": {"must": query, "filter": kept[0] if len(kept) == 1 else kept}}


def _passage(collection: str, hit: dict[str, Any]) -> Passage:
    source = hit["_source"]
    # Read when the question's text work first needs this text (nothing if it is still cached).
    offer(source["title"], source["text"], source.get("analysis"))
    fragments = [
        fragment.replace("<em>", "").replace("</em>", "")
        for fragment in hit.get("highlight", {}).get("text", [])
    ]
    return Passage(
        id=source["id"],
        collection=collection,
        doc_id=source["doc_id"],
        source=source["source"],
        title=source["title"],
        url=source.get("url", ""),
        text=source["text"],
        score=float(hit.get("_score") or 0.0),
        highlights=tuple(fragments),
    )


class ElasticsearchBackend:
    """Search through an ``AsyncElasticsearch`` client that the composition root builds."""

    def __init__(
        self,
        *,
        client: AsyncElasticsearch,
        bulk_chunk_size: int = 500,
        embedder: Embedder | None = None,
        vector_cache: VectorCache | None = None,
        on_embedding_failure: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._bulk_chunk_size = bulk_chunk_size
        self._embedder = embedder
        self._vector_cache = vector_cache
        self._on_embedding_failure = on_embedding_failure
        # Each collection's alias: whether its index holds vectors of the embedder (checked once).
        self._embedded: dict[str, bool] = {}

    @property
    def name(self) -> str:
        return "elasticsearch"

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
        if not query.strip():
            return []
        vector = await self._query_vector(meaning or query)
        if vector is not None and await self._has_vectors(collection):
            return await self._hybrid_search(
                collection, query, vector, limit=limit, broad=broad, corpus=corpus, audience=audience
            )
        try:
            response = await self._client.search(
                index=collection.alias,
                query=_filtered(_match(query, broad=broad), readable_by(audience)),
                highlight={"fields": {"text": {"fragment_size": 160, "number_of_fragments": 1}}},
                source_includes=_SOURCE_FIELDS,
                size=limit,
            )
        except es_exceptions.NotFoundError as exc:
            raise CollectionNotIndexedError(collection=collection.name, reason="no such index") from exc
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc
        return [_passage(collection.name, hit) for hit in response["hits"]["hits"]]

    async def _query_vector(self, text: str) -> Vectors | None:
        return await query_vector(self._embedder, text, self._on_embedding_failure)

    async def _has_vectors(self, collection: Collection) -> bool:
        """Whether the collection's index holds vectors of the configured embedder."""
        known = self._embedded.get(collection.alias)
        if known is not None:
            return known
        try:
            response = await self._client.indices.get_mapping(index=collection.alias)
        except _FAILURES:
            return False  # the search itself says what is wrong
        found = all(
            recorded_by(self._embedder, m.get("mappings", {}).get("_meta", {}).get("embedder"))
            for m in response.body.values()
        )
        if not found:
            logger.warning(
                "collection %s has no vectors of %s; searching it by words only until `confer index`",
                collection.name,
                self._embedder.model if self._embedder is not None else "",
            )
        self._embedded[collection.alias] = found
        return found

    def _words(
        self, query: str, collection: Collection, *, broad: bool, audience: Audience | None
    ) -> dict[str, Any]:
        return _filtered(
            _match(query, broad=broad), {"term": {"collection": collection.name}}, readable_by(audience)
        )

    async def _hybrid_search(
        self,
        collection: Collection,
        query: str,
        vector: Vectors,
        *,
        limit: int,
        broad: bool,
        corpus: Sequence[Collection],
        audience: Audience | None = None,
    ) -> list[Passage]:
        """BM25 with the corpus's statistics and kNN in one ``_msearch``, fused in the client."""
        indexes = ",".join(dict.fromkeys(c.alias for c in (*corpus, collection)))
        fields = [*_SOURCE_FIELDS, "vector"]
        knn: dict[str, Any] = {
            "field": "vector",
            "query_vector": vector.tolist(),
            "k": limit,
            "num_candidates": limit * _KNN_CANDIDATES,
        }
        readable = readable_by(audience)
        if readable is not None:
            knn["filter"] = readable  # a pre-filter: the k nearest of what the audience may read
        searches: list[dict[str, Any]] = [
            {"index": indexes, "search_type": "dfs_query_then_fetch", "ignore_unavailable": True},
            {
                "query": self._words(query, collection, broad=broad, audience=audience),
                "size": limit,
                "_source": fields,
            },
            {"index": collection.alias},
            {"knn": knn, "size": limit, "_source": fields},
        ]
        try:
            response = await self._client.msearch(searches=searches)
            words, meaning = response["responses"]
            for item in (words, meaning):
                if "error" in item:
                    if item.get("status") == 404:
                        raise CollectionNotIndexedError(collection=collection.name, reason="no such index")
                    raise SearchUnavailableError(collection=collection.name, reason="search refused")
            lexical = {h["_id"]: float(h.get("_score") or 0.0) for h in words["hits"]["hits"]}
            hits = {h["_id"]: h for h in [*words["hits"]["hits"], *meaning["hits"]["hits"]]}
            unscored = [pid for pid in hits if pid not in lexical]
            if unscored:  # the meaning's hits, scored by words on the same scale
                more = await self._client.search(
                    index=indexes,
                    search_type="dfs_query_then_fetch",
                    ignore_unavailable=True,
                    query={
                        "bool": {"must": _match(query, broad=broad), "filter": {"ids": {"values": unscored}}}
                    },
                    size=len(unscored),
                    source=False,
                )
                lexical.update({h["_id"]: float(h.get("_score") or 0.0) for h in more["hits"]["hits"]})
        except es_exceptions.NotFoundError as exc:
            raise CollectionNotIndexedError(collection=collection.name, reason="no such index") from exc
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc
        passages = []
        for pid, hit in hits.items():
            stored = hit["_source"].get("vector")
            cosine = float(np.asarray(stored, dtype=np.float32) @ vector) if stored else None
            passage = _passage(collection.name, hit)
            passages.append(passage.model_copy(update={"lexical": lexical.get(pid, 0.0), "semantic": cosine}))
        return fuse(passages)[:limit]

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        if not collections or not query.strip():
            return {}
        vector = await self._query_vector(meaning or query)
        if vector is not None:
            embedded = [c for c in collections if await self._has_vectors(c)]
            if embedded:
                return await self._hybrid_probe(embedded, query, vector, audience)
        searches: list[dict[str, Any]] = []
        words = _filtered(_match(query, broad=False), readable_by(audience))
        for collection in collections:
            searches.append({"index": collection.alias})
            searches.append({"query": words, "size": 1, "_source": False})
        try:
            response = await self._client.msearch(searches=searches)
        except _FAILURES:
            logger.warning("routing probe failed", exc_info=True)
            return {}
        best: dict[str, float] = {}
        for collection, item in zip(collections, response["responses"], strict=False):
            hits = item.get("hits", {}).get("hits", []) if "error" not in item else []
            if hits:
                best[collection.name] = float(hits[0].get("_score") or 0.0)
        return best

    async def _hybrid_probe(
        self,
        collections: Sequence[Collection],
        query: str,
        vector: Vectors,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        """Each collection's best hybrid score, its few best hits fused with every other's."""
        pool: list[Passage] = []
        for collection in collections:
            try:
                pool += await self._hybrid_search(
                    collection, query, vector, limit=3, broad=False, corpus=collections, audience=audience
                )
            except (CollectionNotIndexedError, SearchUnavailableError):
                continue
        return best_by_collection(pool)

    async def _alias_targets(self, alias: str) -> list[str]:
        try:
            response = await self._client.indices.get_alias(name=alias)
        except es_exceptions.NotFoundError:
            return []
        return sorted(response.body.keys())

    async def _existing(self, alias: str) -> dict[str, str | None]:
        """The stored passages' content digests by id (``None`` for an index written before
        digests were stored)."""
        digests: dict[str, str | None] = {}
        async for hit in helpers.async_scan(
            self._client, index=alias, query={"query": {"match_all": {}}}, _source=["digest"], size=1000
        ):
            digests[hit["_id"]] = hit.get("_source", {}).get("digest")
        return digests

    async def sync_collection(
        self,
        collection: Collection,
        passages: Sequence[Passage],
        *,
        progress: ProgressCallback | None = None,
    ) -> SyncStats:
        alias = collection.alias
        wanted = {p.id: p for p in passages}
        digests: dict[str, str | None] = {pid: digest_of(p) for pid, p in wanted.items()}
        try:
            old_indices = await self._alias_targets(alias)
            stored = await self._existing(alias) if old_indices else {}
            analysed, recorded = await self._analysed(old_indices) if old_indices else (False, None)
        except _FAILURES as exc:
            raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc
        earlier = recorded if recorded is not None and recorded < TEXT_FORMAT else None
        # Every wanted passage stored with the same content: nothing to write. (An id whose content
        # changed, a JSONL line edited, counts as removed and added.)
        if old_indices and stored == digests and analysed and earlier is None:
            return SyncStats(added=0, removed=0, unchanged=len(wanted))
        existing = {pid for pid, digest in stored.items() if digests.get(pid) == digest}
        vectors: dict[str, list[float]] = {}
        dimensions = 0
        if self._embedder is not None:
            texts = [passage_text(p.title, p.text) for p in wanted.values()]
            try:
                matrix = await embed_with_cache(self._embedder, self._vector_cache, texts, progress=progress)
            except EmbeddingError as exc:
                raise IndexingError(collection=collection.name, reason=f"embeddings: {exc.reason}") from exc
            dimensions = int(matrix.shape[1]) if len(texts) else self._embedder.dimensions
            vectors = {pid: matrix[i].tolist() for i, pid in enumerate(wanted)}
        new_index = f"{alias}-{time.time_ns()}"
        try:
            try:
                await self._client.indices.create(
                    index=new_index,
                    settings=INDEX_SETTINGS,
                    mappings=index_mappings(self._embedder, dimensions),
                )
            except es_exceptions.BadRequestError as exc:
                if self._embedder is not None and "dense_vector" in str(exc):
                    raise IndexingError(
                        collection=collection.name,
                        reason="the cluster has no dense_vector field type (set CONFER_EMBEDDINGS=off)",
                    ) from exc
                raise
            await helpers.async_bulk(
                self._client,
                self._actions(new_index, collection, wanted.values(), vectors),
                chunk_size=self._bulk_chunk_size,
                refresh="wait_for",
            )
            actions: list[dict[str, Any]] = [{"remove": {"index": i, "alias": alias}} for i in old_indices]
            actions.append({"add": {"index": new_index, "alias": alias}})
            await self._client.indices.update_aliases(actions=actions)
        except (*_FAILURES, helpers.BulkIndexError) as exc:
            await self._delete_quietly(new_index)
            raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc
        for index in old_indices:
            await self._delete_quietly(index)
        self._embedded.pop(alias, None)
        return SyncStats(
            added=len(set(wanted) - existing),
            removed=len(set(stored) - existing),
            unchanged=len(existing),
            earlier_format=earlier,
        )

    async def _analysed(self, indices: Sequence[str]) -> tuple[bool, int]:
        """Whether every one of ``indices`` stores its passages' analyses under the current rules,
        and the oldest ``TEXT_FORMAT`` among them (1 for an index that records none)."""
        response = await self._client.indices.get_mapping(index=",".join(indices))
        version = fingerprint()
        metas = [mapping.get("mappings", {}).get("_meta", {}) for mapping in response.body.values()]
        analysed = all(
            meta.get("analysis") == version and recorded_by(self._embedder, meta.get("embedder"))
            for meta in metas
        )
        formats = [meta.get("text_format") for meta in metas]
        return analysed, min((f if isinstance(f, int) else 1 for f in formats), default=TEXT_FORMAT)

    async def _delete_quietly(self, index: str) -> None:
        try:
            await self._client.indices.delete(index=index)
        except _FAILURES:
            logger.warning("could not delete index %s", index)

    @staticmethod
    async def _actions(
        index: str, collection: Collection, passages: Any, vectors: dict[str, list[float]]
    ) -> AsyncIterator[dict[str, Any]]:
        for passage in passages:
            vector = {"vector": vectors[passage.id]} if passage.id in vectors else {}
            yield {
                "_index": index,
                "_id": passage.id,
                "_source": {
                    "id": passage.id,
                    "collection": collection.name,
                    "doc_id": passage.doc_id,
                    "source": passage.source,
                    "title": passage.title,
                    "url": passage.url,
                    "text": passage.text,
                    "analysis": analyse(passage.title, passage.text),
                    "digest": digest_of(passage),
                    **({} if passage.readers is None else {"readers": list(passage.readers)}),
                    **vector,
                },
            }

    async def passages_from_sources(self, collection: Collection, sources: Sequence[str]) -> list[Passage]:
        if not sources:
            return []
        found: list[Passage] = []
        try:
            async for hit in helpers.async_scan(
                self._client,
                index=collection.alias,
                query={"query": {"terms": {"source": list(sources)}}},
                _source=_STORED_FIELDS,
            ):
                readers = hit["_source"].get("readers")
                passage = _passage(collection.name, hit).scored(0.0)
                found.append(
                    passage.model_copy(update={"readers": None if readers is None else tuple(readers)})
                )
        except es_exceptions.NotFoundError:
            return []
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc
        return found

    async def drop_collection(self, collection: Collection) -> None:
        try:
            for index in await self._alias_targets(collection.alias):
                await self._delete_quietly(index)
        except _FAILURES as exc:
            raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc

    async def generations(self, collections: Sequence[Collection]) -> dict[str, str]:
        """The concrete index behind each alias: a sync that changes anything writes a new one."""
        if not collections:
            return {}
        by_alias = {c.alias: c.name for c in collections}
        try:
            response = await self._client.indices.get_alias(name=",".join(by_alias), ignore_unavailable=True)
        except es_exceptions.NotFoundError:
            return {}
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collections[0].name, reason=type(exc).__name__) from exc
        found: dict[str, list[str]] = {}
        for index, entry in response.body.items():
            for alias in entry.get("aliases", {}):
                if alias in by_alias:
                    found.setdefault(by_alias[alias], []).append(index)
        return {name: ",".join(sorted(indices)) for name, indices in found.items()}

    async def stats(self, collection: Collection) -> CollectionStats | None:
        try:
            response = await self._client.search(
                index=collection.alias,
                size=0,
                track_total_hits=True,
                aggs={"documents": {"cardinality": {"field": "doc_id"}}},
            )
        except es_exceptions.NotFoundError:
            return None
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc
        return CollectionStats(
            documents=int(response["aggregations"]["documents"]["value"]),
            passages=int(response["hits"]["total"]["value"]),
        )

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        return await meanings(self._embedder, self._vector_cache, texts, self._on_embedding_failure)

    async def health(self) -> bool:
        try:
            return bool(await self._client.ping())
        except _FAILURES:
            return False

    async def close(self) -> None:
        await self._client.close()
        if self._embedder is not None:
            await self._embedder.close()
        if self._vector_cache is not None:
            self._vector_cache.close()


def build_elasticsearch_backend(
    *,
    url: str,
    api_key: str | None = None,
    request_timeout: float = 10.0,
    embedder: Embedder | None = None,
    vector_cache: VectorCache | None = None,
    on_embedding_failure: Callable[[str], None] | None = None,
) -> ElasticsearchBackend:
    """Build the client and backend; nothing connects until the first request."""
    client = AsyncElasticsearch(url, api_key=api_key, request_timeout=request_timeout, retry_on_timeout=False)
    return ElasticsearchBackend(
        client=client, embedder=embedder, vector_cache=vector_cache, on_embedding_failure=on_embedding_failure
    )
