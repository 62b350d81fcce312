"""A fake Confluence Cloud (REST API v1 under ``/wiki/rest/api``) that answers the requests the
connector sends, as the documented API answers them, and 400 to any other shape: an unknown path,
query parameter, ``expand`` value or CQL form. Authentication is HTTP basic with one email and API
token (401 otherwise). ``fail`` makes a path answer an error first (a 429 with Retry-After, a 500).

Permissions: the space's read permission (``space_readers``: group names and user emails, and
``anonymous``), each page's read restriction (``restrict``), and the groups with their members
(``group``); a user whose email Confluence hides (``hidden_emails``) is listed without one, as
Cloud lists people whose profile keeps it private.
"""

import base64
import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.fakes.server import serve_in_thread

EMAIL = "ana@example.com"
TOKEN = "atl-token-123"
_CQL = re.compile(
    r'^space="([^"]+)" and type in \(page, attachment\)'
    r'(?: and lastmodified >= "(\d{4}-\d{2}-\d{2} \d{2}:\d{2})")?$'
)


@dataclass
class Page:
    id: str
    title: str
    body: str
    parent: str | None = None
    version: int = 1
    modified: datetime = field(default_factory=lambda: datetime.now(UTC))
    data: bytes | None = None  # an attachment's file (``title`` is its name, ``parent`` its page)

    @property
    def kind(self) -> str:
        return "page" if self.data is None else "attachment"


@dataclass
class Group:
    id: str
    name: str
    members: list[str]  # emails


@dataclass
class FakeConfluence:
    space: str = "ENG"
    base: str = ""
    pages: dict[str, Page] = field(default_factory=dict)
    space_readers: list[str] = field(default_factory=lambda: ["confluence-users"])
    anonymous: bool = False
    restrictions: dict[str, list[str]] = field(default_factory=dict)  # page id -> groups and emails
    groups: dict[str, Group] = field(default_factory=dict)  # by name
    hidden_emails: set[str] = field(default_factory=set)
    requests: list[tuple[str, int]] = field(default_factory=list)  # (path with query, status)
    failures: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, page_id: str, title: str, body: str, parent: str | None = None) -> None:
        """Create a page, or edit it: a new version, modified now."""
        with self._lock:
            old = self.pages.get(page_id)
            version = old.version + 1 if old else 1
            self.pages[page_id] = Page(page_id, title, body, parent, version)

    def attach(self, attachment_id: str, page_id: str, name: str, data: bytes) -> None:
        """Attach a file to a page, or upload a new version of it."""
        with self._lock:
            old = self.pages.get(attachment_id)
            version = old.version + 1 if old else 1
            self.pages[attachment_id] = Page(attachment_id, name, "", page_id, version, data=data)

    def group(self, name: str, members: list[str]) -> None:
        """Create a group, or set its members."""
        with self._lock:
            old = self.groups.get(name)
            group_id = old.id if old else hashlib.sha256(name.encode()).hexdigest()[:8]
            self.groups[name] = Group(group_id, name, list(members))

    def restrict(self, page_id: str, readers: list[str] | None) -> None:
        """Set a page's read restriction (group names and emails); ``None`` lifts it. As in
        Confluence, this changes neither the page's version nor its modification time."""
        with self._lock:
            if readers is None:
                self.restrictions.pop(page_id, None)
            else:
                self.restrictions[page_id] = list(readers)

    def _user(self, email: str) -> dict[str, Any]:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-users/ (the User object)
        return {
            "type": "known",
            "accountId": "acc-" + hashlib.sha256(email.encode()).hexdigest()[:12],
            "accountType": "atlassian",
            "email": "" if email in self.hidden_emails else email,
            "publicName": email.split("@")[0],
            "displayName": email.split("@")[0].title(),
        }

    def _subjects(self, names: list[str]) -> dict[str, Any]:
        users = [self._user(n) for n in names if "@" in n]
        groups = [
            {"type": "group", "name": n, "id": self.groups[n].id if n in self.groups else ""}
            for n in names
            if "@" not in n
        ]
        return {"user": users, "group": groups}

    def delete(self, page_id: str) -> None:
        with self._lock:
            del self.pages[page_id]

    def fail(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures.setdefault(path, []).extend([(status, headers or {})] * times)

    def fetched_pages(self) -> list[str]:
        """The page ids asked for one by one, in order."""
        return [m.group(1) for p, _ in self.requests if (m := re.match(r"/wiki/rest/api/content/(\d+)\?", p))]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/wiki/rest/api/space/{key}", self._space)
        app.router.add_get("/wiki/rest/api/content/search", self._search)
        app.router.add_get("/wiki/rest/api/content/{id:\\d+}", self._page)
        app.router.add_get(
            "/wiki/rest/api/content/{id:\\d+}/restriction/byOperation/{operation}", self._restriction
        )
        app.router.add_get("/wiki/rest/api/group/{group}/membersByGroupId", self._members)
        app.router.add_get("/wiki/download/attachments/{page}/{name}", self._download)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def _answer(
        self, request: web.Request, status: int, body: dict[str, Any], **headers: str
    ) -> web.Response:
        self.requests.append((request.path_qs, status))
        return web.json_response(body, status=status, headers=headers)

    def _refuse(self, request: web.Request, message: str) -> web.Response:
        return self._answer(request, 400, {"statusCode": 400, "message": message})

    def _gate(self, request: web.Request, allowed: set[str]) -> web.Response | None:
        """401 without the credentials, a queued failure, or 400 for a parameter the API lacks."""
        expected = "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            # https://developer.atlassian.com/cloud/confluence/basic-auth-for-rest-apis/
            return self._answer(request, 401, {"statusCode": 401, "message": "Unauthorized"})
        pending = self.failures.get(request.path)
        if pending:
            status, headers = pending.pop(0)
            # https://developer.atlassian.com/cloud/confluence/rate-limiting/ (429 with Retry-After)
            return self._answer(request, status, {"statusCode": status, "message": "try later"}, **headers)
        unknown = set(request.query) - allowed
        if unknown:
            return self._refuse(request, f"unknown parameters {sorted(unknown)}")
        return None

    async def _unknown(self, request: web.Request) -> web.Response:
        return self._refuse(request, f"no such resource {request.method} {request.path}")

    async def _space(self, request: web.Request) -> web.Response:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-space/#api-wiki-rest-api-space-spacekey-get
        refused = self._gate(request, {"expand"})
        if refused:
            return refused
        expand = request.query.get("expand", "")
        if expand not in ("", "permissions"):
            return self._refuse(request, f"cannot expand {expand}")
        if request.match_info["key"] != self.space:
            return self._answer(request, 404, {"statusCode": 404, "message": "No space with key"})
        body: dict[str, Any] = {"id": 1, "key": self.space, "name": "Engineering", "type": "global"}
        if expand == "permissions":
            # The space's permissions (SpacePermission: an operation, its subjects, anonymousAccess);
            # an administer permission beside the read one, which grants no reading by itself.
            with self._lock:
                subjects = self._subjects(self.space_readers)
            body["permissions"] = [
                {
                    "id": 1,
                    "subjects": {
                        "user": {"results": subjects["user"], "size": len(subjects["user"])},
                        "group": {"results": subjects["group"], "size": len(subjects["group"])},
                    },
                    "operation": {"operation": "read", "targetType": "space"},
                    "anonymousAccess": self.anonymous,
                    "unlicensedAccess": False,
                },
                {
                    "id": 2,
                    "subjects": {"user": {"results": [self._user("admin@example.com")], "size": 1}},
                    "operation": {"operation": "administer", "targetType": "space"},
                    "anonymousAccess": False,
                    "unlicensedAccess": False,
                },
            ]
        return self._answer(request, 200, body)

    async def _restriction(self, request: web.Request) -> web.Response:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content-restrictions/#api-wiki-rest-api-content-id-restriction-byoperation-operationkey-get
        refused = self._gate(request, {"expand", "start", "limit"})
        if refused:
            return refused
        expand = set(request.query.get("expand", "restrictions.user,restrictions.group").split(","))
        if not expand <= {"restrictions.user", "restrictions.group", "content"}:
            return self._refuse(request, f"cannot expand {sorted(expand)}")
        if request.match_info["operation"] not in ("read", "update"):
            return self._refuse(request, "operationKey must be read or update")
        window = self._window(request)
        if isinstance(window, web.Response):
            return window
        limit, start = window
        page_id = request.match_info["id"]
        with self._lock:
            if page_id not in self.pages:
                return self._answer(request, 404, {"statusCode": 404, "message": "No content found with id"})
            names = self.restrictions.get(page_id, []) if request.match_info["operation"] == "read" else []
            subjects = self._subjects(names)
        restrictions: dict[str, Any] = {}
        for kind in ("user", "group"):
            results = subjects[kind][start : start + limit]
            restrictions[kind] = {"results": results, "start": start, "limit": limit, "size": len(results)}
        return self._answer(
            request,
            200,
            {
                "operation": request.match_info["operation"],
                "restrictions": restrictions,
                "_links": {"base": f"{self.base}/wiki"},
            },
        )

    async def _members(self, request: web.Request) -> web.Response:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-group/#api-wiki-rest-api-group-groupid-membersbygroupid-get
        refused = self._gate(request, {"start", "limit", "shouldReturnTotalSize", "expand"})
        if refused:
            return refused
        window = self._window(request)
        if isinstance(window, web.Response):
            return window
        limit, start = window
        with self._lock:
            found = [g for g in self.groups.values() if g.id == request.match_info["group"]]
            if not found:
                return self._answer(request, 404, {"statusCode": 404, "message": "Group not found"})
            users = [self._user(m) for m in found[0].members][start : start + limit]
        return self._answer(
            request, 200, {"results": users, "start": start, "limit": limit, "size": len(users), "_links": {}}
        )

    def _window(self, request: web.Request) -> tuple[int, int] | web.Response:
        try:
            limit, start = int(request.query.get("limit", "25")), int(request.query.get("start", "0"))
        except ValueError:
            return self._refuse(request, "limit and start are numbers")
        return limit, start

    def _listing(self, pages: list[Page], limit: int, start: int, path: str) -> dict[str, Any]:
        chosen = pages[start : start + limit]
        links: dict[str, str] = {"base": f"{self.base}/wiki", "context": "/wiki"}
        if start + limit < len(pages):
            links["next"] = f"{path}&start={start + limit}"
        return {
            "results": [
                {
                    "id": p.id,
                    "type": p.kind,
                    "status": "current",
                    "title": p.title,
                    "version": {"number": p.version},
                }
                for p in chosen
            ],
            "start": start,
            "limit": limit,
            "size": len(chosen),
            "_links": links,
        }

    async def _search(self, request: web.Request) -> web.Response:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-search/#api-wiki-rest-api-search-get
        refused = self._gate(request, {"cql", "limit", "start", "expand"})
        if refused:
            return refused
        match = _CQL.match(request.query.get("cql", ""))
        if not match or request.query.get("expand", "version") != "version":
            return self._refuse(request, "Could not parse cql")  # a CQL form this fake does not know
        window = self._window(request)
        if isinstance(window, web.Response):
            return window
        space, since = match.groups()
        floor = datetime.strptime(since, "%Y-%m-%d %H:%M").replace(tzinfo=UTC) if since else None
        with self._lock:
            pages = [
                p
                for p in sorted(self.pages.values(), key=lambda p: p.id)
                if space == self.space and (floor is None or p.modified >= floor)
            ]
        return self._answer(request, 200, self._listing(pages, *window, path=request.path_qs))

    async def _download(self, request: web.Request) -> web.Response:
        # The attachment's _links.download, with the same credentials as the API.
        refused = self._gate(request, {"version", "api"})
        if refused:
            return refused
        with self._lock:
            found = [
                p
                for p in self.pages.values()
                if p.kind == "attachment"
                and p.parent == request.match_info["page"]
                and p.title == request.match_info["name"]
            ]
        if not found or found[0].data is None:
            return self._answer(request, 404, {"statusCode": 404, "message": "Not found"})
        self.requests.append((request.path_qs, 200))
        return web.Response(body=found[0].data, content_type="application/octet-stream")

    async def _page(self, request: web.Request) -> web.Response:
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-id-get
        refused = self._gate(request, {"expand"})
        if refused:
            return refused
        expand = set(request.query.get("expand", "").split(","))
        with self._lock:
            page = self.pages.get(request.match_info["id"])
            ancestors: list[Page] = []
            parent = page.parent if page else None
            while parent is not None and parent in self.pages:
                ancestors.insert(0, self.pages[parent])
                parent = self.pages[parent].parent
        allowed = (
            {"version", "container", "ancestors"}
            if page is not None and page.kind == "attachment"
            else {"body.storage", "version", "ancestors", "container"}
        )
        if not expand <= allowed:
            return self._refuse(request, f"cannot expand {sorted(expand)}")
        if page is None:
            return self._answer(request, 404, {"statusCode": 404, "message": "No content found with id"})
        body: dict[str, Any] = {
            "id": page.id,
            "type": page.kind,
            "status": "current",
            "title": page.title,
            "_links": {"base": f"{self.base}/wiki", "webui": f"/spaces/{self.space}/pages/{page.id}"},
        }
        if page.kind == "attachment":
            # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content---attachments/
            body["_links"]["webui"] = f"/pages/viewpageattachments.action?pageId={page.parent}"
            body["_links"]["download"] = (
                f"/download/attachments/{page.parent}/{page.title}?version={page.version}&api=v2"
            )
            if "container" in expand and page.parent in self.pages:
                body["container"] = {
                    "id": page.parent,
                    "type": "page",
                    "title": self.pages[page.parent].title,
                }
        elif "container" in expand:  # a page's container is its space
            body["container"] = {"id": 1, "key": self.space, "name": "Engineering", "type": "global"}
        if "body.storage" in expand:
            body["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        if "version" in expand:
            body["version"] = {"number": page.version, "when": page.modified.isoformat()}
        if "ancestors" in expand:  # root first, as the API lists them (an attachment's: its pages)
            body["ancestors"] = [{"id": a.id, "type": "page", "title": a.title} for a in ancestors]
        return self._answer(request, 200, body)


@contextmanager
def serve_confluence() -> Iterator[FakeConfluence]:
    fake = FakeConfluence()
    with serve_in_thread(fake.app()) as base:
        fake.base = base
        yield fake
