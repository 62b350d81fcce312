"""The Confluence connector: the pages of one space, Cloud or Data Center, through the REST API
(v1, which both serve at ``{url}/rest/api``), incremental by modification time.

- Changes: a CQL search for the space's pages modified since the cursor (``lastmodified``, minute
  precision in the searching user's time zone, so the search reaches a day further back); a page
  whose version number is the one stored is not fetched again.
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-search/#api-wiki-rest-api-search-get
  https://developer.atlassian.com/cloud/confluence/cql-fields/#last-modified
- A page: its storage-format body, version and ancestors; its title is its place in the space's
  hierarchy (``Handbook › Travel › Trains``).
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-id-get
- Deletions: every page id of the space, listed once the changes are applied; a stored page not
  among them was deleted (or moved out of the space).
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-get
- 429 with Retry-After is waited out (https://developer.atlassian.com/cloud/confluence/rate-limiting/).
- Credentials: ``retrieval.connectors.credentials.ConfluenceCredentials``.
"""

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html import escape
from typing import Any
from urllib.parse import urlencode

from retrieval.collections import ConfluenceSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument
from retrieval.connectors.convert import convert
from retrieval.connectors.credentials import CONFLUENCE_VARIABLES, ConfluenceCredentials
from retrieval.connectors.http import PoliteClient, Response, get_or_fail, json_object
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem

PAGE_SIZE = 50
# CQL compares lastmodified in the searching user's time zone, to the minute: a search a day wider
# than the cursor misses nothing, and the pages it finds again are skipped by their version.
OVERLAP = timedelta(days=1)


class ConfluenceConnector:
    def __init__(
        self,
        *,
        spec: ConfluenceSource,
        collection: str,
        client: PoliteClient,
        credentials: ConfluenceCredentials,
    ) -> None:
        self.spec = spec
        self.collection = collection
        self.client = client
        self.base = spec.url.rstrip("/")
        self._authorization = credentials.authorization()
        self._complete = False

    @property
    def key(self) -> str:
        return f"confluence:{self.base}/{self.spec.space}"

    @property
    def label(self) -> str:
        return f"{self.base} space {self.spec.space}"

    def _error(self, problem: SourceProblem, detail: str = "") -> SourceError:
        return SourceError(
            collection=self.collection, source=f"confluence {self.label}", problem=problem, detail=detail
        )

    async def _get(self, path: str, params: Mapping[str, str | int] | None = None) -> dict[str, Any]:
        if self._authorization is None:
            raise self._error("credentials", f"set {CONFLUENCE_VARIABLES}")
        url = f"{self.base}/rest/api/{path}" + (f"?{urlencode(params)}" if params else "")
        headers = {"Authorization": self._authorization, "Accept": "application/json"}
        return self._json(await get_or_fail(self.client, url, headers=headers, fail=self._error))

    def _json(self, response: Response) -> dict[str, Any]:
        if response.status in (401, 403):
            raise self._error("credentials", f"HTTP {response.status}: check {CONFLUENCE_VARIABLES}")
        if response.status == 404:
            raise _NotFoundError
        return json_object(response, fail=self._error)

    async def check(self) -> None:
        """The space exists and the credentials may read it."""
        try:
            await self._get(f"space/{self.spec.space}")
        except _NotFoundError:
            raise self._error(
                "not_found", f"no space {self.spec.space} visible to these credentials"
            ) from None

    async def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        started = datetime.now(UTC)
        cql = f'space="{self.spec.space}" and type=page'
        if cursor is not None:
            since = datetime.fromisoformat(cursor) - OVERLAP
            cql += f' and lastmodified >= "{since:%Y-%m-%d %H:%M}"'
        self._complete = False
        listed: list[Change] = []
        start = 0
        while True:
            params: dict[str, str | int] = {
                "cql": cql,
                "limit": PAGE_SIZE,
                "start": start,
                "expand": "version",
            }
            body = await self._get("content/search", params)
            results = body.get("results", [])
            for page in results:
                page_id = str(page["id"])
                stored = known.get(page_id)
                if stored is None or stored.version != str(page["version"]["number"]):
                    listed.append(Change(doc_id=page_id))
            if len(results) < PAGE_SIZE or "next" not in body.get("_links", {}):
                break
            start += len(results)
        for n, change in enumerate(listed):
            last = n == len(listed) - 1
            yield Change(change.doc_id, cursor=started.isoformat()) if last else change
        self._complete = True

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        try:
            page = await self._get(f"content/{change.doc_id}", {"expand": "body.storage,version,ancestors"})
        except _NotFoundError:
            return FetchResult("gone", change.doc_id, detail="HTTP 404")
        ancestors = [str(a.get("title", "")) for a in page.get("ancestors", []) if a.get("title")]
        title = " › ".join([*ancestors, str(page["title"])])
        links = page.get("_links", {})
        url = f"{links.get('base', self.base)}{links.get('webui', '')}"
        body = page.get("body", {}).get("storage", {}).get("value", "")
        html = f"<html><head><title>{escape(title)}</title></head><body>{body}</body></html>"
        try:
            documents = convert(html.encode(), suffix=".html", source=url, url=url, main_text=False)
        except DocumentLoadError:
            documents = ()  # an empty page: stored, so that it is not fetched again
        documents = tuple(replace(d, doc_id=change.doc_id, title=title) for d in documents)
        version = str(page["version"]["number"])
        return FetchResult("fetched", change.doc_id, version, documents)

    async def existing(self) -> set[str] | None:
        if not self._complete:
            return None
        ids: set[str] = set()
        start = 0
        while True:
            params: dict[str, str | int] = {
                "spaceKey": self.spec.space,
                "type": "page",
                "limit": 100,
                "start": start,
            }
            body = await self._get("content", params)
            results = body.get("results", [])
            ids.update(str(page["id"]) for page in results)
            if len(results) < 100 or "next" not in body.get("_links", {}):
                return ids
            start += len(results)

    async def close(self) -> None:
        await self.client.close()


class _NotFoundError(Exception):
    """A 404 from the API: a page deleted, or a space that does not exist."""
