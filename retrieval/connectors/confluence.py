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
- Permissions (``permissions: true``): a page may be read by whoever the space's read permission
  names (everyone with anonymous access) and, where the page or one of its ancestors has a read
  restriction, only by those every such restriction names too; an attachment, by its page's readers.
  Users are named by their email (those whose email Confluence does not show are left out), groups
  expanded to their members' emails (a group Confluence does not list is kept by its name).
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-space/#api-wiki-rest-api-space-spacekey-get
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content-restrictions/#api-wiki-rest-api-content-id-restriction-byoperation-operationkey-get
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-group/#api-wiki-rest-api-group-groupid-membersbygroupid-get
  https://support.atlassian.com/confluence-cloud/docs/what-are-page-permissions-and-restrictions/
"""

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlencode

from retrieval.audience import EVERYONE, both_allow, principal, readers_of
from retrieval.collections import ConfluenceSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument, Readers
from retrieval.connectors.convert import convert
from retrieval.connectors.credentials import CONFLUENCE_VARIABLES, ConfluenceCredentials
from retrieval.connectors.http import PoliteClient, Response, get_or_fail, json_object
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES

PAGE_SIZE = 50
MEMBERS_PAGE = 200  # users and groups per request of a restriction or a group's members
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
        # Read once per sync: the space's readers, each page's own read restriction, each group's members.
        self._space_readers: tuple[str, ...] | None = None
        self._restrictions: dict[str, tuple[str, ...] | None] = {}
        self._members: dict[str, tuple[str, ...]] = {}

    @property
    def key(self) -> str:
        return f"confluence:{self.base}/{self.spec.space}"

    @property
    def permissions(self) -> bool:
        return self.spec.permissions

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

    async def _listed(self, path: str, params: Mapping[str, str | int]) -> dict[str, Any] | None:
        """``_get``, or ``None`` where the account may not list it (403) or it is gone (404)."""
        if self._authorization is None:
            raise self._error("credentials", f"set {CONFLUENCE_VARIABLES}")
        url = f"{self.base}/rest/api/{path}?{urlencode(params)}"
        headers = {"Authorization": self._authorization, "Accept": "application/json"}
        response = await get_or_fail(self.client, url, headers=headers, fail=self._error)
        return None if response.status in (403, 404) else self._json(response)

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
        self._space_readers, self._restrictions, self._members = None, {}, {}
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
        readers = None
        if self.permissions:
            ancestors_ids = [str(a["id"]) for a in page.get("ancestors", []) if a.get("id")]
            readers = await self._page_readers(change.doc_id, ancestors_ids)
        return FetchResult("fetched", change.doc_id, version, documents, readers=readers)

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
        readers = await self.readers(str(item["container"]["id"])) if self.permissions else None
        return FetchResult(
            "fetched", attachment_id, str(item["version"]["number"]), documents, readers=readers
        )

    async def readers(self, doc_id: str) -> Readers:
        """Who may read a page (or an attachment: its page) now; nobody when it is gone."""
        try:
            item = await self._get(f"content/{doc_id}", {"expand": "ancestors,container"})
        except _NotFoundError:
            return ()
        if item.get("type") == "attachment":
            return await self.readers(str(item.get("container", {}).get("id", "")))
        ancestors = [str(a["id"]) for a in item.get("ancestors", []) if a.get("id")]
        return await self._page_readers(doc_id, ancestors)

    async def _page_readers(self, page_id: str, ancestors: list[str]) -> tuple[str, ...]:
        """The space's readers, narrowed by the read restriction of the page and of each ancestor
        (a restriction on a page holds for the pages under it)."""
        readers: tuple[str, ...] | None = await self._space()
        for restricted in (*ancestors, page_id):
            readers = both_allow(readers, await self._restriction(restricted))
        return readers or ()

    async def _space(self) -> tuple[str, ...]:
        """Who the space's read permission names (its users and its groups' members; everyone
        when anonymous users may read it)."""
        if self._space_readers is None:
            space = await self._get(f"space/{self.spec.space}", {"expand": "permissions"})
            names: list[str] = []
            for permission in space.get("permissions", []):
                operation = permission.get("operation", {})
                if (operation.get("operation"), operation.get("targetType")) != ("read", "space"):
                    continue
                if permission.get("anonymousAccess"):
                    names.append(EVERYONE)
                subjects = permission.get("subjects", {})
                names += await self._subjects(subjects)
            self._space_readers = readers_of(names)
        return self._space_readers

    async def _restriction(self, content_id: str) -> tuple[str, ...] | None:
        """Who a page's own read restriction names; ``None`` when it has none."""
        if content_id not in self._restrictions:
            users: list[dict[str, Any]] = []
            groups: list[dict[str, Any]] = []
            start = 0
            while True:
                params: dict[str, str | int] = {
                    "expand": "restrictions.user,restrictions.group",
                    "start": start,
                    "limit": MEMBERS_PAGE,
                }
                try:
                    found = await self._get(f"content/{content_id}/restriction/byOperation/read", params)
                except _NotFoundError:
                    found = {}
                restrictions = found.get("restrictions", {})
                page_users = restrictions.get("user", {}).get("results", [])
                page_groups = restrictions.get("group", {}).get("results", [])
                users += page_users
                groups += page_groups
                if len(page_users) < MEMBERS_PAGE and len(page_groups) < MEMBERS_PAGE:
                    break
                start += MEMBERS_PAGE
            restricted = bool(users or groups)
            names = await self._subjects({"user": {"results": users}, "group": {"results": groups}})
            self._restrictions[content_id] = readers_of(names) if restricted else None
        return self._restrictions[content_id]

    async def _subjects(self, subjects: Mapping[str, Any]) -> list[str]:
        """The emails of the users and of the groups' members a permission names."""
        names = [str(u.get("email") or "") for u in subjects.get("user", {}).get("results", [])]
        for group in subjects.get("group", {}).get("results", []):
            names += await self._group(group)
        return [n for n in names if n]

    async def _group(self, group: Mapping[str, Any]) -> tuple[str, ...]:
        """A group's members' emails; its name when Confluence does not list its members."""
        name = principal(str(group.get("name", "")))
        group_id = str(group.get("id") or "")
        key = group_id or name
        if key not in self._members:
            members: list[str] = []
            start = 0
            while group_id:
                params: dict[str, str | int] = {"start": start, "limit": MEMBERS_PAGE}
                found = await self._listed(f"group/{group_id}/membersByGroupId", params)
                if found is None:  # not listed to this account: the group stays a name
                    members = []
                    break
                results = found.get("results", [])
                members += [str(u.get("email") or "") for u in results]
                if len(results) < MEMBERS_PAGE:
                    break
                start += MEMBERS_PAGE
            self._members[key] = tuple(m for m in members if m) or ((name,) if name else ())
        return self._members[key]

    async def existing(self) -> set[str] | None:
        if not self._complete:
            return None
        return {str(item["id"]) async for item in self._search(self._space_cql())}

    async def close(self) -> None:
        await self.client.close()


class _NotFoundError(Exception):
    """A 404 from the API: a page deleted, or a space that does not exist."""
