"""A fake Elasticsearch 8 on 127.0.0.1 that understands ``dense_vector`` and kNN, for the hybrid path.

``osmem-server`` (the OpenSearch-compatible server the other backend tests use) has neither, so the
Elasticsearch backend's search by words and meaning would run only against a real cluster. This
fake serves the real ``elasticsearch`` client exactly the requests that path sends, and nothing
else: creating an index with a strict mapping (keyword, text, a disabled object, ``dense_vector``
with cosine), bulk writes, aliases, mappings, a search by words (``multi_match`` of ``best_fields``,
alone or in a ``bool`` with filters), a kNN search (with a ``filter``), and ``_msearch`` of these.
Filters: ``term``, ``terms`` (a keyword field holding any of the values; an array field matches
when one of its values does), ``ids``, ``exists``, and ``bool`` of them (``must``, ``filter``,
``should`` with ``minimum_should_match``, ``must_not``), as the query DSL documents them:
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-bool-query.html
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-terms-query.html
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-exists-query.html
https://www.elastic.co/guide/en/elasticsearch/reference/8.19/knn-search.html#knn-search-filter-example
Any other request, parameter or body key is answered 400 (``parsing_exception``), as a cluster
answers one it cannot parse, never with hits made up: a test that passes here sent what the fake
checked.

Scores: BM25 as Lucene computes it (k1 1.2, b 0.75, ``best_fields``: the best field's score,
boosts applied) over lower-cased words without English stop words (the ``english`` analyzer also
stems: the fake does not). Every index is one shard: a search's statistics are each index's own,
and with ``search_type=dfs_query_then_fetch`` those of every index the search names together. A
filter never changes statistics. kNN is exact: the ``k`` best cosines of the named index, scored
``(1 + cosine) / 2`` as Elasticsearch scores cosine similarity.
"""

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.server import serve_locally

_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
_K1 = 1.2
_B = 0.75
_FIELD_TYPES = frozenset({"keyword", "text", "object", "dense_vector"})


def analyse(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP_WORDS]


class RefusedError(Exception):
    """A request the fake does not understand (or Elasticsearch would refuse): answered 400."""

    def __init__(self, reason: str, *, status: int = 400, kind: str = "parsing_exception") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.kind = kind

    def body(self) -> dict[str, Any]:
        cause = {"type": self.kind, "reason": self.reason}
        return {"error": {"root_cause": [cause], **cause}, "status": self.status}


def _only(body: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise RefusedError(f"[{where}] unknown field {sorted(unknown)}")


@dataclass
class _Index:
    mappings: dict[str, Any]
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def dims(self) -> int | None:
        vector = self.mappings["properties"].get("vector")
        return int(vector["dims"]) if vector else None


@dataclass
class FakeElasticsearch:
    url: str = ""
    # Every request: (method, path with query, parsed body or None).
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    # Every request answered 400 or 404 for its shape, with the reason.
    refused: list[str] = field(default_factory=list)
    _indices: dict[str, _Index] = field(default_factory=dict)
    _aliases: dict[str, set[str]] = field(default_factory=dict)
    _runner: web.AppRunner | None = None

    async def start(self) -> "FakeElasticsearch":
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def searches(self, kind: str) -> list[dict[str, Any]]:
        """The search bodies received that hold ``kind`` (``knn`` or ``query``), ``_msearch``'s too."""
        bodies: list[dict[str, Any]] = []
        for _, path, body in self.requests:
            if path.split("?")[0].endswith("_msearch") and isinstance(body, list):
                bodies += [b for b in body[1::2] if kind in b]
            elif path.split("?")[0].endswith("_search") and isinstance(body, dict) and kind in body:
                bodies.append(body)
        return bodies

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        ndjson = request.path.endswith(("_bulk", "_msearch"))
        try:
            body: Any = None
            if raw:
                lines = raw.decode().splitlines()
                body = [json.loads(line) for line in lines if line.strip()] if ndjson else json.loads(raw)
            self.requests.append((request.method, request.path_qs, body))
            accept = request.headers.get("Accept", "")
            if "compatible-with" in accept and "compatible-with=8" not in accept:
                raise RefusedError(
                    f"unsupported media type {accept}", status=406, kind="media_type_header_exception"
                )
            status, payload = self._route(request.method, request.path, dict(request.query), body)
        except RefusedError as exc:
            self.refused.append(f"{request.method} {request.path_qs}: {exc.reason}")
            status, payload = exc.status, exc.body()
        except (ValueError, KeyError, TypeError) as exc:
            self.refused.append(f"{request.method} {request.path_qs}: {exc!r}")
            status, payload = 400, RefusedError(repr(exc)).body()
        headers = {"X-Elastic-Product": "Elasticsearch"}
        if request.method == "HEAD":
            return web.Response(status=status, headers=headers)
        return web.json_response(payload, status=status, headers=headers)

    def _route(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if method == "HEAD" and not parts:
            return 200, {}
        if parts == ["_bulk"] and method in ("POST", "PUT"):
            _only(params, {"refresh"}, "bulk")
            return 200, self._bulk(body)
        if parts == ["_aliases"] and method == "POST":
            return 200, self._update_aliases(body)
        if parts == ["_msearch"] and method in ("POST", "GET"):
            _only(params, set(), "msearch")
            return 200, self._msearch(body)
        if len(parts) == 2 and parts[0] == "_alias" and method == "GET":
            return self._get_alias(parts[1])
        if len(parts) == 2 and parts[1] == "_mapping" and method == "GET":
            return 200, {name: {"mappings": self._indices[name].mappings} for name in self._resolve(parts[0])}
        if parts == ["_search", "scroll"]:
            # A scan's search answers every hit at once: its next page is empty, then it is cleared.
            if method == "DELETE":
                return 200, {"succeeded": True, "num_freed": 1}
            _only(body or {}, {"scroll_id", "scroll"}, "scroll")
            return 200, {
                "_scroll_id": body["scroll_id"],
                "_shards": {"total": 1, "successful": 1},
                "hits": {"hits": []},
            }
        if len(parts) == 2 and parts[1] == "_search" and method in ("POST", "GET") and "scroll" in params:
            return 200, self._scan(parts[0], params, body or {})
        if len(parts) == 2 and parts[1] == "_search" and method in ("POST", "GET"):
            _only(params, {"search_type", "ignore_unavailable", "_source_includes"}, "search")
            header = {"index": parts[0], **params}
            return 200, self._search(header, body or {})
        if len(parts) == 1 and not parts[0].startswith("_"):
            if method == "PUT":
                return 200, self._create(parts[0], body or {})
            if method == "DELETE":
                if self._indices.pop(parts[0], None) is None:
                    raise RefusedError(
                        f"no such index [{parts[0]}]", status=404, kind="index_not_found_exception"
                    )
                for members in self._aliases.values():
                    members.discard(parts[0])
                return 200, {"acknowledged": True}
        raise RefusedError(f"the fake does not serve {method} {path}", kind="illegal_argument_exception")

    # -- indices and aliases -----------------------------------------------------------------

    def _create(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        _only(body, {"settings", "mappings"}, "create index")
        if name in self._indices:
            raise RefusedError(f"index [{name}] already exists", kind="resource_already_exists_exception")
        mappings = body.get("mappings", {})
        _only(mappings, {"dynamic", "properties", "_meta"}, "mappings")
        if mappings.get("dynamic") != "strict":
            raise RefusedError("the fake serves strict mappings only", kind="mapper_parsing_exception")
        for name_, spec in mappings["properties"].items():
            kind = spec.get("type")
            if kind not in _FIELD_TYPES:
                raise RefusedError(
                    f"No handler for type [{kind}] declared on field [{name_}]",
                    kind="mapper_parsing_exception",
                )
            if kind == "dense_vector":
                _only(spec, {"type", "dims", "index", "similarity"}, "dense_vector")
                if spec.get("similarity") != "cosine" or not 1 <= int(spec["dims"]) <= 4096:
                    raise RefusedError(
                        f"dense_vector [{name_}]: cosine and 1-4096 dims only",
                        kind="mapper_parsing_exception",
                    )
            if kind == "object" and spec.get("enabled") is not False:
                raise RefusedError(
                    f"object [{name_}]: the fake keeps disabled objects only", kind="mapper_parsing_exception"
                )
        self._indices[name] = _Index(mappings=mappings)
        return {"acknowledged": True, "shards_acknowledged": True, "index": name}

    def _resolve(self, names: str, *, ignore_unavailable: bool = False) -> list[str]:
        found: list[str] = []
        for name in names.split(","):
            if name in self._indices:
                found.append(name)
            elif self._aliases.get(name):
                found += sorted(self._aliases[name])
            elif not ignore_unavailable:
                raise RefusedError(f"no such index [{name}]", status=404, kind="index_not_found_exception")
        return list(dict.fromkeys(found))

    def _get_alias(self, name: str) -> tuple[int, Any]:
        members = self._aliases.get(name)
        if not members:
            return 404, {"error": f"alias [{name}] missing", "status": 404}
        return 200, {index: {"aliases": {name: {}}} for index in sorted(members)}

    def _update_aliases(self, body: dict[str, Any]) -> dict[str, Any]:
        _only(body, {"actions"}, "aliases")
        for action in body["actions"]:
            ((verb, spec),) = action.items()
            _only(spec, {"index", "alias"}, verb)
            if spec["index"] not in self._indices:
                raise RefusedError(
                    f"no such index [{spec['index']}]", status=404, kind="index_not_found_exception"
                )
            if verb == "add":
                self._aliases.setdefault(spec["alias"], set()).add(spec["index"])
            elif verb == "remove":
                self._aliases.get(spec["alias"], set()).discard(spec["index"])
            else:
                raise RefusedError(f"unknown alias action [{verb}]")
        return {"acknowledged": True}

    def _bulk(self, lines: list[dict[str, Any]]) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            ((verb, meta),) = action.items()
            if verb != "index":
                raise RefusedError(f"the fake's bulk takes index actions only, not [{verb}]")
            index = self._indices.get(meta["_index"])
            result: dict[str, Any] = {"_index": meta["_index"], "_id": meta["_id"]}
            try:
                if index is None:
                    raise RefusedError(
                        f"no such index [{meta['_index']}]", status=404, kind="index_not_found_exception"
                    )
                self._check_document(index, source)
            except RefusedError as exc:
                items.append({verb: {**result, "status": exc.status, "error": exc.body()["error"]}})
                continue
            index.docs[meta["_id"]] = source
            items.append({verb: {**result, "status": 201, "result": "created"}})
        errors = any("error" in item["index"] for item in items)
        return {"took": 1, "errors": errors, "items": items}

    @staticmethod
    def _check_document(index: _Index, source: dict[str, Any]) -> None:
        properties = index.mappings["properties"]
        for name, value in source.items():
            if name not in properties:
                raise RefusedError(
                    f"mapping set to strict, dynamic introduction of [{name}] is not allowed",
                    kind="strict_dynamic_mapping_exception",
                )
            if properties[name]["type"] == "dense_vector" and len(value) != index.dims:
                raise RefusedError(
                    f"The [dense_vector] field [{name}] in doc has a different number of dimensions "
                    f"[{len(value)}] than defined in the mapping [{index.dims}]",
                    kind="document_parsing_exception",
                )

    # -- search ------------------------------------------------------------------------------

    def _scan(self, names: str, params: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
        """The first page of ``helpers.async_scan`` over every document (ids only or sources)."""
        _only(params, {"scroll"}, "scan")
        _only(body, {"query", "_source", "sort", "size"}, "scan")
        if body.get("query") != {"match_all": {}}:
            raise RefusedError("the fake scans with match_all only")
        hits = []
        for name in self._resolve(names):
            for doc_id, doc in self._indices[name].docs.items():
                hit: dict[str, Any] = {"_index": name, "_id": doc_id, "_score": None}
                wanted = body.get("_source", True)
                if isinstance(wanted, list):
                    hit["_source"] = {k: v for k, v in doc.items() if k in wanted}
                elif wanted is not False:
                    hit["_source"] = doc
                hits.append(hit)
        shards = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
        return {"_scroll_id": "scan", "_shards": shards, "hits": {"hits": hits}}

    def _msearch(self, lines: list[dict[str, Any]]) -> dict[str, Any]:
        responses = []
        for header, body in zip(lines[::2], lines[1::2], strict=True):
            _only(header, {"index", "search_type", "ignore_unavailable"}, "msearch header")
            try:
                responses.append({**self._search(header, body), "status": 200})
            except RefusedError as exc:
                self.refused.append(f"_msearch item: {exc.reason}")
                responses.append(exc.body())
        return {"took": 1, "responses": responses}

    def _search(self, header: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        _only(body, {"query", "knn", "size", "_source", "highlight", "aggs", "track_total_hits"}, "search")
        search_type = header.get("search_type", "query_then_fetch")
        if search_type not in ("query_then_fetch", "dfs_query_then_fetch"):
            raise RefusedError(f"unknown search_type [{search_type}]", kind="illegal_argument_exception")
        ignore = str(header.get("ignore_unavailable", "false")).lower() == "true"
        names = self._resolve(header["index"], ignore_unavailable=ignore)
        size = int(body.get("size", 10))
        if ("query" in body) == ("knn" in body) and "aggs" not in body:
            raise RefusedError("the fake takes one of [query] and [knn] in a search")
        if "knn" in body:
            scored = self._knn(names, body["knn"])
        elif "query" in body:
            scored = self._query(names, body["query"], dfs=search_type == "dfs_query_then_fetch")
        else:  # no query: every document (match_all), each scored 1.0
            scored = [(name, doc_id, 1.0) for name in names for doc_id in self._indices[name].docs]
        scored.sort(key=lambda hit: (-hit[2], hit[0], hit[1]))
        includes = header.get("_source_includes")
        source = body.get("_source", includes.split(",") if includes else True)
        hits = []
        for index, doc_id, score in scored[:size]:
            hit: dict[str, Any] = {"_index": index, "_id": doc_id, "_score": score}
            stored = self._indices[index].docs[doc_id]
            if source is not False:
                hit["_source"] = (
                    stored if source is True else {k: v for k, v in stored.items() if k in source}
                )
            if "highlight" in body:
                hit["highlight"] = self._highlight(body, stored)
            hits.append(hit)
        aggregations = self._aggregations(body.get("aggs", {}), [(i, d) for i, d, _ in scored])
        return {
            **({"aggregations": aggregations} if "aggs" in body else {}),
            "took": 1,
            "timed_out": False,
            "_shards": {"total": len(names), "successful": len(names), "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": len(scored), "relation": "eq"},
                "max_score": scored[0][2] if scored else None,
                "hits": hits,
            },
        }

    def _aggregations(self, aggs: dict[str, Any], hits: list[tuple[str, str]]) -> dict[str, Any]:
        """Cardinality aggregations (the distinct values of a keyword field over the hits): exact
        here, approximate in Elasticsearch above its precision threshold.
        https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations-metrics-cardinality-aggregation.html"""
        out: dict[str, Any] = {}
        for name, spec in aggs.items():
            ((kind, options),) = spec.items()
            if kind != "cardinality":
                raise RefusedError(f"the fake's aggregations are cardinality only, not [{kind}]")
            _only(options, {"field"}, "cardinality")
            values = {
                value
                for index, doc_id in hits
                for value in _values(self._indices[index].docs[doc_id].get(options["field"]))
            }
            out[name] = {"value": len(values)}
        return out

    def _knn(self, names: list[str], knn: dict[str, Any]) -> list[tuple[str, str, float]]:
        _only(knn, {"field", "query_vector", "k", "num_candidates", "filter"}, "knn")
        # A kNN filter is a pre-filter: the k nearest among the documents it lets through.
        keep = _filter(knn["filter"]) if "filter" in knn else (lambda doc_id, doc: True)
        k, candidates = int(knn["k"]), int(knn["num_candidates"])
        if not 1 <= k <= candidates <= 10_000:
            raise RefusedError(
                "[num_candidates] must be at least [k] and at most 10000", kind="illegal_argument_exception"
            )
        query = [float(x) for x in knn["query_vector"]]
        scored = []
        for name in names:
            index = self._indices[name]
            spec = index.mappings["properties"].get(knn["field"])
            if spec is None or spec["type"] != "dense_vector":
                raise RefusedError(
                    f"[knn] queries are only supported on [dense_vector] fields, not [{knn['field']}]"
                )
            if len(query) != index.dims:
                raise RefusedError(
                    f"the query vector has a different number of dimensions [{len(query)}] than the "
                    f"document vectors [{index.dims}]",
                    kind="illegal_argument_exception",
                )
            for doc_id, doc in index.docs.items():
                if knn["field"] in doc and keep(doc_id, doc):
                    scored.append((name, doc_id, (1.0 + _cosine(query, doc[knn["field"]])) / 2.0))
        scored.sort(key=lambda hit: -hit[2])
        return scored[:k]

    def _query(self, names: list[str], query: dict[str, Any], *, dfs: bool) -> list[tuple[str, str, float]]:
        match, keep = self._parse_query(query)
        words = analyse(match["query"])
        fields = [(f.split("^")[0], float(f.split("^")[1]) if "^" in f else 1.0) for f in match["fields"]]
        together = _Statistics([self._indices[n] for n in names], [f for f, _ in fields])
        if "fuzziness" in match:
            # AUTO: a word of 3-5 letters matches words one edit away, a longer one two edits (a
            # transposition is one edit), each scored as a word of its own; Elasticsearch blends
            # the expanded terms' statistics, which the fake does not.
            # https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#fuzziness
            indexed = {w for counts in together.frequency.values() for w in counts}
            words = [w for word in words for w in sorted({word} | {v for v in indexed if _near(word, v)})]
        scored = []
        for name in names:
            statistics = together if dfs else _Statistics([self._indices[name]], [f for f, _ in fields])
            for doc_id, doc in self._indices[name].docs.items():
                if not keep(doc_id, doc):
                    continue
                best = max(boost * statistics.bm25(f, words, doc.get(f, "")) for f, boost in fields)
                if best > 0:
                    scored.append((name, doc_id, best))
        return scored

    @staticmethod
    def _parse_query(query: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        ((kind, spec),) = query.items()
        if kind == "multi_match":
            must, keep = spec, lambda doc_id, doc: True
        elif kind == "bool":
            _only(spec, {"must", "filter"}, "bool")
            ((inner, must),) = spec["must"].items()
            if inner != "multi_match":
                raise RefusedError(f"the fake's bool takes a multi_match, not [{inner}]")
            keep = _filter({"bool": {"filter": spec["filter"]}})
        else:
            raise RefusedError(f"unknown query [{kind}]")
        _only(must, {"query", "fields", "type", "fuzziness"}, "multi_match")
        if must.get("fuzziness", "AUTO") != "AUTO":
            raise RefusedError(f"the fake's fuzziness is AUTO only, not [{must['fuzziness']}]")
        if must.get("type", "best_fields") != "best_fields":
            raise RefusedError(f"the fake's multi_match is best_fields only, not [{must['type']}]")
        return must, keep

    @staticmethod
    def _highlight(body: dict[str, Any], doc: dict[str, Any]) -> dict[str, list[str]]:
        _only(body["highlight"], {"fields"}, "highlight")
        query = body["query"].get("multi_match") or body["query"]["bool"]["must"]["multi_match"]
        words = set(analyse(query["query"]))
        out: dict[str, list[str]] = {}
        for name, spec in body["highlight"]["fields"].items():
            _only(spec, {"fragment_size", "number_of_fragments"}, "highlight field")
            text = str(doc.get(name, ""))[: int(spec.get("fragment_size", 100))]
            marked = re.sub(
                r"[A-Za-z0-9]+", lambda m: f"<em>{m[0]}</em>" if m[0].lower() in words else m[0], text
            )
            if "<em>" in marked:
                out[name] = [marked]
        return out


Keep = Any  # (doc_id, doc) -> bool


def _filter(clause: dict[str, Any]) -> Keep:
    """A filter clause as a predicate over (id, stored document); 400 for one the fake does not know."""
    if not isinstance(clause, dict) or len(clause) != 1:
        raise RefusedError("a query clause is an object with one key")
    ((kind, spec),) = clause.items()
    if kind == "term":
        ((name, value),) = spec.items()
        return lambda doc_id, doc: value in _values(doc.get(name))
    if kind == "terms":
        ((name, values),) = spec.items()
        if not isinstance(values, list):
            raise RefusedError("[terms] query does not support a lookup here")
        wanted = set(values)
        return lambda doc_id, doc: bool(wanted & set(_values(doc.get(name))))
    if kind == "ids":
        _only(spec, {"values"}, "ids")
        ids = set(spec["values"])
        return lambda doc_id, doc: doc_id in ids
    if kind == "exists":
        _only(spec, {"field"}, "exists")
        name = spec["field"]
        return lambda doc_id, doc: bool(_values(doc.get(name)))
    if kind == "bool":
        _only(spec, {"must", "filter", "should", "must_not", "minimum_should_match"}, "bool")

        def clauses(key: str) -> list[Keep]:
            value = spec.get(key, [])
            return [_filter(c) for c in (value if isinstance(value, list) else [value])]

        every = clauses("must") + clauses("filter")
        some, none = clauses("should"), clauses("must_not")
        # Without must or filter, at least one should clause must match (Elasticsearch's default).
        least = int(spec.get("minimum_should_match", 0 if every else 1 if some else 0))
        return lambda doc_id, doc: (
            all(keep(doc_id, doc) for keep in every)
            and not any(keep(doc_id, doc) for keep in none)
            and sum(keep(doc_id, doc) for keep in some) >= least
        )
    raise RefusedError(f"the fake's filters are term, terms, ids, exists and bool, not [{kind}]")


def _near(word: str, other: str) -> bool:
    """Whether ``other`` is within AUTO fuzziness of ``word`` (optimal string alignment distance)."""
    allowed = 0 if len(word) < 3 else 1 if len(word) <= 5 else 2
    if not allowed or word == other or abs(len(word) - len(other)) > allowed:
        return False
    previous2: list[int] = []
    previous = list(range(len(other) + 1))
    for i, a in enumerate(word, 1):
        current = [i]
        for j, b in enumerate(other, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == other[j - 2] and word[i - 2] == b:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1] <= allowed


def _values(value: Any) -> list[Any]:
    """A field's values: an array's items, one value, or none."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


class _Statistics:
    """BM25's statistics of some indices' fields: documents, their lengths, each word's documents."""

    def __init__(self, indices: list[_Index], fields: list[str]) -> None:
        self.count: dict[str, int] = {}
        self.average: dict[str, float] = {}
        self.frequency: dict[str, Counter[str]] = {}
        for name in fields:
            lengths = [len(analyse(str(d[name]))) for i in indices for d in i.docs.values() if d.get(name)]
            self.count[name] = len(lengths)
            self.average[name] = sum(lengths) / len(lengths) if lengths else 0.0
            self.frequency[name] = Counter(
                w for i in indices for d in i.docs.values() for w in set(analyse(str(d.get(name, ""))))
            )

    def bm25(self, name: str, words: list[str], text: str) -> float:
        tokens = analyse(str(text))
        if not tokens:
            return 0.0
        counts = Counter(tokens)
        score = 0.0
        for word in words:
            frequency = counts.get(word, 0)
            if not frequency:
                continue
            documents = self.frequency[name][word]
            idf = math.log(1.0 + (self.count[name] - documents + 0.5) / (documents + 0.5))
            norm = _K1 * (1.0 - _B + _B * len(tokens) / self.average[name])
            score += idf * frequency / (frequency + norm)
        return score
