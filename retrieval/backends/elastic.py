"""Elasticsearch backend: one concrete index per collection behind an alias.

A change to a collection is written into a fresh concrete index and the alias is swapped in one
``_aliases`` call, so readers never see a half-written collection and a failed write leaves the old
index live. Routing probes go out as one ``_msearch``.

Each passage is stored with its text analysis (``retrieval.analysis``), in a field Elasticsearch
keeps in ``_source`` without parsing it; a search hands it to the text caches with the hit. The
index's ``_meta`` records the analysis rules it was written with: a collection indexed before
analyses were stored, or under other rules, is written anew at its next sync even when its
passages are unchanged.
"""

import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import AsyncElasticsearch, helpers
from elasticsearch import exceptions as es_exceptions

from retrieval.analysis import analyse, fingerprint, offer
from retrieval.collections import Collection
from retrieval.errors import CollectionNotIndexedError, IndexingError, SearchUnavailableError
from retrieval.passages import CollectionStats, Passage, SyncStats

logger = logging.getLogger(__name__)

SEARCH_FIELDS = ["title^2", "text"]
_SOURCE_FIELDS = ["id", "doc_id", "source", "title", "url", "text", "analysis"]
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
    },
}


def index_mappings() -> dict[str, Any]:
    """``INDEX_MAPPINGS`` with the analysis rules' fingerprint in ``_meta``."""
    return {**INDEX_MAPPINGS, "_meta": {"analysis": fingerprint()}}


def _match(query: str, *, broad: bool) -> dict[str, Any]:
    clause: dict[str, Any] = {"query": query, "fields": SEARCH_FIELDS, "type": "best_fields"}
    if broad:
        clause["fuzziness"] = "AUTO"
    return {"multi_match": clause}


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

    def __init__(self, *, client: AsyncElasticsearch, bulk_chunk_size: int = 500) -> None:
        self._client = client
        self._bulk_chunk_size = bulk_chunk_size

    @property
    def name(self) -> str:
        return "elasticsearch"

    async def search(
        self, collection: Collection, query: str, *, limit: int, broad: bool = False
    ) -> list[Passage]:
        if not query.strip():
            return []
        try:
            response = await self._client.search(
                index=collection.alias,
                query=_match(query, broad=broad),
                highlight={"fields": {"text": {"fragment_size": 160, "number_of_fragments": 1}}},
                source_includes=_SOURCE_FIELDS,
                size=limit,
            )
        except es_exceptions.NotFoundError as exc:
            raise CollectionNotIndexedError(collection=collection.name, reason="no such index") from exc
        except _FAILURES as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc
        return [_passage(collection.name, hit) for hit in response["hits"]["hits"]]

    async def probe(self, collections: Sequence[Collection], query: str) -> dict[str, float]:
        if not collections or not query.strip():
            return {}
        searches: list[dict[str, Any]] = []
        for collection in collections:
            searches.append({"index": collection.alias})
            searches.append({"query": _match(query, broad=False), "size": 1, "_source": False})
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

    async def _alias_targets(self, alias: str) -> list[str]:
        try:
            response = await self._client.indices.get_alias(name=alias)
        except es_exceptions.NotFoundError:
            return []
        return sorted(response.body.keys())

    async def _existing_ids(self, alias: str) -> set[str]:
        ids: set[str] = set()
        async for hit in helpers.async_scan(
            self._client, index=alias, query={"query": {"match_all": {}}}, _source=False, size=1000
        ):
            ids.add(hit["_id"])
        return ids

    async def sync_collection(self, collection: Collection, passages: Sequence[Passage]) -> SyncStats:
        alias = collection.alias
        wanted = {p.id: p for p in passages}
        try:
            old_indices = await self._alias_targets(alias)
            existing = await self._existing_ids(alias) if old_indices else set()
            analysed = await self._analysed(old_indices) if old_indices else False
        except _FAILURES as exc:
            raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc
        if old_indices and existing == set(wanted) and analysed:
            return SyncStats(added=0, removed=0, unchanged=len(wanted))
        new_index = f"{alias}-{time.time_ns()}"
        try:
            await self._client.indices.create(
                index=new_index, settings=INDEX_SETTINGS, mappings=index_mappings()
            )
            await helpers.async_bulk(
                self._client,
                self._actions(new_index, collection, wanted.values()),
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
        return SyncStats(
            added=len(set(wanted) - existing),
            removed=len(existing - set(wanted)),
            unchanged=len(existing & set(wanted)),
        )

    async def _analysed(self, indices: Sequence[str]) -> bool:
        """Whether every one of ``indices`` stores its passages' analyses under the current rules."""
        response = await self._client.indices.get_mapping(index=",".join(indices))
        version = fingerprint()
        return all(
            mapping.get("mappings", {}).get("_meta", {}).get("analysis") == version
            for mapping in response.body.values()
        )

    async def _delete_quietly(self, index: str) -> None:
        try:
            await self._client.indices.delete(index=index)
        except _FAILURES:
            logger.warning("could not delete index %s", index)

    @staticmethod
    async def _actions(index: str, collection: Collection, passages: Any) -> AsyncIterator[dict[str, Any]]:
        for passage in passages:
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
                _source=_SOURCE_FIELDS,
            ):
                found.append(_passage(collection.name, hit).scored(0.0))
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

    async def health(self) -> bool:
        try:
            return bool(await self._client.ping())
        except _FAILURES:
            return False

    async def close(self) -> None:
        await self._client.close()


def build_elasticsearch_backend(
    *, url: str, api_key: str | None = None, request_timeout: float = 10.0
) -> ElasticsearchBackend:
    """Build the client and backend; nothing connects until the first request."""
    client = AsyncElasticsearch(url, api_key=api_key, request_timeout=request_timeout, retry_on_timeout=False)
    return ElasticsearchBackend(client=client)
