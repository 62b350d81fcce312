"""The Confluence connector: the pages of one space, Cloud or Data Center, through the REST API
(v1, which both serve at ``{url}/rest/api``), incremental by modification time.

- Changes: a CQL search for the space's pages and attachments modified since the cursor
  (``lastmodified``, minute precision in the searching user's time zone, so the search reaches a day
  further back); one whose version number is the one stored is not fetched again.
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-search/#api-wiki-rest-api-search-get
  https://developer.atlassian.com/cloud/confluence/cql-fields/#last-modified
- A page: its storage-format body, version and ancestors; its title is its place in the space's
  hierarchy (``Handbook › Travel › Trains``).
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-id-get
- Attachments Confer reads (PDF, Office documents, …): downloaded, titled under their page.
- Deletions: every page and attachment id of the space, searched once the changes are applied; a
  stored one not among them was deleted (or moved out of the space).
- 429 with Retry-After is waited out (https://developer.atlassian.com/cloud/confluence/rate-limiting/).
- Credentials: ``retrieval.connectors.credentials.ConfluenceCredentials``.
"""

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlencode

from retrieval.collections import ConfluenceSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument
from retrieval.connectors.convert import convert
from retrieval.connectors.credentials import CONFLUENCE_VARIABLES, ConfluenceCredentials
from retrieval.connectors.http import PoliteClient, Response, get_or_fail, json_object
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES

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
        self._kinds: dict[str, str] = {}

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

    async def _search(self, cql: str) -> AsyncIterator[dict[str, Any]]:
        """Every result of a CQL search, page after page: the pages, and the attachments Confer
        reads (by their file name)."""
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
            for item in results:
                kind = item.get("type")
                name = PurePosixPath(str(item.get("title", ""))).suffix.lower()
                if kind == "page" or (kind == "attachment" and name in SUPPORTED_SUFFIXES):
                    yield item
            if len(results) < PAGE_SIZE or "next" not in body.get("_links", {}):
                return
            start += len(results)

    def _space_cql(self) -> str:
        return f'space="{self.spec.space}" and type in (page, attachment)'

    async def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        started = datetime.now(UTC)
        cql = self._space_cql()
        if cursor is not None:
            since = datetime.fromisoformat(cursor) - OVERLAP
            cql += f' and lastmodified >= "{since:%Y-%m-%d %H:%M}"'
        self._complete = False
        listed: list[Change] = []
        async for item in self._search(cql):
            item_id = str(item["id"])
            stored = known.get(item_id)
            if stored is None or stored.version != str(item["version"]["number"]):
                self._kinds[item_id] = str(item["type"])
                listed.append(Change(doc_id=item_id))
        for change in listed:
            yield change
        yield Change("", cursor=started.isoformat())
        self._complete = True

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        if self._kinds.pop(change.doc_id, "page") == "attachment":
            return await self._attachment(change.doc_id)
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

    async def _attachment(self, attachment_id: str) -> FetchResult:
        """An attachment's file, read by its type; titled by its name under its page's title.
        https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content---attachments/"""
        try:
            item = await self._get(f"content/{attachment_id}", {"expand": "version,container"})
        except _NotFoundError:
            return FetchResult("gone", attachment_id, detail="HTTP 404")
        links = item.get("_links", {})
        base = str(links.get("base", self.base))
        name = str(item["title"])
        url = f"{base}{links.get('webui', links.get('download', ''))}"
        if self._authorization is None:
            raise self._error("credentials", f"set {CONFLUENCE_VARIABLES}")
        headers = {"Authorization": self._authorization}
        response = await get_or_fail(
            self.client, f"{base}{links['download']}", headers=headers, fail=self._error
        )
        if response.status == 404:
            return FetchResult("gone", attachment_id, detail="HTTP 404")
        if response.status != 200:
            raise self._error(
                "interrupted" if response.status >= 500 else "refused", f"HTTP {response.status}"
            )
        try:
            documents = convert(
                response.body, suffix=PurePosixPath(name).suffix.lower(), source=url, url=url, name=name
            )
        except DocumentLoadError:
            documents = ()
        page = str(item.get("container", {}).get("title", ""))
        documents = tuple(
            replace(d, doc_id=attachment_id, title=f"{page} › {d.title}" if page else d.title)
            for d in documents
        )
        return FetchResult("fetched", attachment_id, str(item["version"]["number"]), documents)

    async def existing(self) -> set[str] | None:
        if not self._complete:
            return None
        return {str(item["id"]) async for item in self._search(self._space_cql())}

    async def close(self) -> None:
        await self.client.close()


class _NotFoundError(Exception):
    """A 404 from the API: a page deleted, or a space that does not exist."""
