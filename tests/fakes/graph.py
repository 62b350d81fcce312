"""Fake Microsoft Entra ID (token endpoint, over HTTPS: MSAL speaks nothing else) and Microsoft
Graph (a SharePoint site with one document library), answering the requests the SharePoint
connector sends as the documented APIs answer them, and 400 to any other shape.

Graph's delta: the first listing returns every item; its last page carries an ``@odata.deltaLink``
whose token is the change counter at that moment; a listing from a token returns the items changed
since, deleted ones with a ``deleted`` facet. ``fail`` queues error answers for a path.

Permissions: each item's (``grant``) as Graph's permission resources (a user, an Entra group, a
SharePoint group, a sharing link), the directory's users (``user``: object id, user principal
name, mail) and groups (``group``: members, nested groups too), listed by ``transitiveMembers``.
"""

import itertools
import re
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.server import serve_in_thread

TENANT = "contoso-tenant"
CLIENT_ID = "app-123"
CLIENT_SECRET = "app-secret-456"
HOST = "contoso.sharepoint.com"
SITE_ID = "contoso.sharepoint.com,site-1,web-1"
DRIVE_ID = "b!documents"
PAGE_SIZE = 2


@dataclass
class Item:
    id: str
    name: str
    folder: str  # "/Policies"
    content: bytes
    version: int = 1
    deleted: bool = False
    changed: int = 0  # the change counter when it last changed
    permissions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FakeGraph:
    entra: str = ""  # https://127.0.0.1:PORT
    base: str = ""  # http://127.0.0.1:PORT
    items: dict[str, Item] = field(default_factory=dict)
    requests: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path with query, status)
    failures: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    users: dict[str, tuple[str, str]] = field(default_factory=dict)  # object id -> (UPN, mail)
    groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # id -> (name, member ids)
    _counter: "itertools.count[int]" = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, item_id: str, path: str, content: bytes | str) -> None:
        """Create or change a file at ``path`` ("/Policies/leave.docx")."""
        folder, _, name = path.rpartition("/")
        data = content.encode() if isinstance(content, str) else content
        with self._lock:
            old = self.items.get(item_id)
            version = old.version + 1 if old else 1
            self.items[item_id] = Item(item_id, name, folder, data, version, changed=next(self._counter))

    def user(self, object_id: str, upn: str, mail: str = "") -> None:
        self.users[object_id] = (upn, mail or upn)

    def group(self, group_id: str, name: str, members: list[str]) -> None:
        """An Entra group; ``members`` are user or group object ids."""
        self.groups[group_id] = (name, list(members))

    def grant(self, item_id: str, *granted: dict[str, Any]) -> None:
        """Set a file's permissions, as ``{"user": id}``, ``{"group": id}``, ``{"site_group": name}``,
        ``{"link": scope, "users": [ids]}`` (each read), beside the owner's. Graph lists them with
        no change to the file's cTag."""
        owner = {
            "id": "owner",
            "roles": ["owner"],
            "grantedToV2": {"siteGroup": {"id": "3", "displayName": "HR Owners", "loginName": "HR Owners"}},
        }
        resources = [owner]
        for n, grant in enumerate(granted):
            resource: dict[str, Any] = {"id": f"perm{n}", "roles": ["read"]}
            if "user" in grant:
                resource["grantedToV2"] = self._identities(grant["user"])
            elif "group" in grant:
                name = self.groups[grant["group"]][0]
                resource["grantedToV2"] = {
                    "group": {"id": grant["group"], "displayName": name},
                    "siteGroup": {
                        "id": "7",
                        "displayName": name,
                        "loginName": f"c:0o.c|federateddirectoryclaimprovider|{grant['group']}",
                    },
                }
            elif "site_group" in grant:
                name = grant["site_group"]
                resource["grantedToV2"] = {"siteGroup": {"id": "9", "displayName": name, "loginName": name}}
            else:
                resource["link"] = {
                    "scope": grant["link"],
                    "type": "view",
                    "webUrl": f"https://{HOST}/:w:/s/x",
                }
                resource["grantedToIdentitiesV2"] = [self._identities(u) for u in grant.get("users", [])]
            resources.append(resource)
        with self._lock:
            self.items[item_id].permissions = resources

    def _identities(self, user_id: str) -> dict[str, Any]:
        """A user as a permission names them: ``user`` (object id and name only) and ``siteUser``,
        whose claims login carries the user principal name."""
        upn = self.users[user_id][0]
        name = upn.split("@")[0].title()
        return {
            "user": {"id": user_id, "displayName": name},
            "siteUser": {"id": "12", "displayName": name, "loginName": f"i:0#.f|membership|{upn}"},
        }

    def delete(self, item_id: str) -> None:
        with self._lock:
            self.items[item_id].deleted = True
            self.items[item_id].changed = next(self._counter)

    def fail(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures.setdefault(path, []).extend([(status, headers or {})] * times)

    def downloads(self) -> list[str]:
        """The item ids whose content was asked for, in order."""
        return [m.group(1) for _, p, _ in self.requests if (m := re.search(r"/items/([^/]+)/content$", p))]

    # Entra ID ------------------------------------------------------------------------------------

    def entra_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{tenant}/v2.0/.well-known/openid-configuration", self._openid)
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def _log(self, request: web.Request, status: int) -> None:
        with self._lock:
            self.requests.append((request.method, request.path_qs, status))

    def _json(self, request: web.Request, status: int, body: dict[str, Any], **headers: str) -> web.Response:
        self._log(request, status)
        return web.json_response(body, status=status, headers=headers)

    async def _unknown(self, request: web.Request) -> web.Response:
        return self._json(request, 400, {"error": {"code": "BadRequest", "message": "unknown request"}})

    async def _openid(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/entra/identity-platform/v2-protocols-oidc#fetch-the-openid-configuration-document
        tenant = request.match_info["tenant"]
        if tenant != TENANT:
            return self._json(request, 400, {"error": "invalid_tenant", "error_description": "AADSTS90002"})
        root = f"{self.entra}/{TENANT}"
        return self._json(
            request,
            200,
            {
                "token_endpoint": f"{root}/oauth2/v2.0/token",
                "authorization_endpoint": f"{root}/oauth2/v2.0/authorize",
                "issuer": f"{root}/v2.0",
            },
        )

    async def _token(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow#first-case-access-token-request-with-a-shared-secret
        form = await request.post()
        if not set(form) <= {"client_id", "client_secret", "grant_type", "scope", "client_info"}:
            return self._json(request, 400, {"error": "invalid_request", "error_description": "AADSTS900144"})
        if (
            form.get("grant_type") != "client_credentials"
            or form.get("scope") != "https://graph.microsoft.com/.default"
        ):
            return self._json(request, 400, {"error": "invalid_request", "error_description": "AADSTS70011"})
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return self._json(
                request,
                401,
                {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret"},
            )
        token = f"graph-token-{len(self.tokens) + 1}"
        self.tokens.add(token)
        return self._json(request, 200, {"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    # Graph ---------------------------------------------------------------------------------------

    def graph_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1.0/sites/{host}:/{path:.*}", self._site)
        app.router.add_get("/v1.0/sites/{site}/drives", self._drives)
        app.router.add_get("/v1.0/drives/{drive}/root/delta", self._delta)
        app.router.add_get("/v1.0/drives/{drive}/items/{item}/content", self._content)
        app.router.add_get("/v1.0/drives/{drive}/items/{item}/permissions", self._permissions)
        app.router.add_get("/v1.0/groups/{group}/transitiveMembers", self._members)
        app.router.add_get("/v1.0/users/{user}", self._user)
        app.router.add_get("/download/{item}", self._download)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def _gate(self, request: web.Request, allowed: set[str]) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or header[7:] not in self.tokens:
            # https://learn.microsoft.com/en-us/graph/errors
            return self._json(request, 401, {"error": {"code": "InvalidAuthenticationToken", "message": "…"}})
        pending = self.failures.get(request.path)
        if pending:
            status, headers = pending.pop(0)
            # https://learn.microsoft.com/en-us/graph/throttling (429 with Retry-After)
            return self._json(
                request, status, {"error": {"code": "activityLimitReached", "message": "…"}}, **headers
            )
        if not set(request.query) <= allowed:
            return self._json(request, 400, {"error": {"code": "BadRequest", "message": "unknown parameter"}})
        return None

    async def _site(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/site-getbypath
        refused = self._gate(request, set())
        if refused:
            return refused
        if request.match_info["host"] != HOST or request.match_info["path"] != "sites/HR":
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        return self._json(request, 200, {"id": SITE_ID, "webUrl": f"https://{HOST}/sites/HR"})

    async def _drives(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/drive-list
        refused = self._gate(request, set())
        if refused:
            return refused
        if request.match_info["site"] != SITE_ID:
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        drives = [{"id": DRIVE_ID, "name": "Documents", "driveType": "documentLibrary"}]
        return self._json(request, 200, {"value": drives})

    def _resource(self, item: Item) -> dict[str, Any]:
        # https://learn.microsoft.com/en-us/graph/api/resources/driveitem
        if item.deleted:
            return {"id": item.id, "deleted": {"state": "deleted"}, "parentReference": {"driveId": DRIVE_ID}}
        return {
            "id": item.id,
            "name": item.name,
            "cTag": f'"c:{{{item.id}}},{item.version}"',
            "eTag": f'"{{{item.id}}},{item.version}"',
            "file": {"mimeType": "application/octet-stream"},
            "size": len(item.content),
            "webUrl": f"https://{HOST}/sites/HR/Shared%20Documents{item.folder}/{item.name}",
            "parentReference": {"driveId": DRIVE_ID, "path": f"/drives/{DRIVE_ID}/root:{item.folder}"},
        }

    async def _delta(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/driveitem-delta
        refused = self._gate(request, {"token", "skip"})
        if refused:
            return refused
        if request.match_info["drive"] != DRIVE_ID:
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        since = int(request.query.get("token", "0"))
        skip = int(request.query.get("skip", "0"))
        with self._lock:
            now = next(self._counter)
            changed = sorted(
                (i for i in self.items.values() if i.changed > since and not (since == 0 and i.deleted)),
                key=lambda i: i.changed,
            )
            folders = [
                {"id": f"folder{n}", "name": f, "folder": {"childCount": 1}}
                for n, f in enumerate({i.folder for i in changed})
            ]
            listing = [*folders, *(self._resource(i) for i in changed)]
        page = listing[skip : skip + PAGE_SIZE]
        root = f"{self.base}/v1.0/drives/{DRIVE_ID}/root/delta"
        body: dict[str, Any] = {"value": page}
        if skip + PAGE_SIZE < len(listing):
            body["@odata.nextLink"] = f"{root}?token={since}&skip={skip + PAGE_SIZE}"
        else:
            body["@odata.deltaLink"] = f"{root}?token={now}"
        return self._json(request, 200, body)

    async def _content(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/driveitem-get-content: 302 to a download URL
        refused = self._gate(request, set())
        if refused:
            return refused
        item = self.items.get(request.match_info["item"])
        if item is None or item.deleted:
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        self._log(request, 302)
        raise web.HTTPFound(f"{self.base}/download/{item.id}?sig=pre-authenticated")

    async def _permissions(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/driveitem-list-permissions (the item's own and
        # inherited permissions; https://learn.microsoft.com/en-us/graph/api/resources/permission)
        refused = self._gate(request, {"$select"})
        if refused:
            return refused
        item = self.items.get(request.match_info["item"])
        if item is None or item.deleted:
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        return self._json(request, 200, {"value": item.permissions})

    async def _members(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/group-list-transitivemembers: users and groups,
        # nested members included; ``$select`` picks the users' properties.
        refused = self._gate(request, {"$select", "$top"})
        if refused:
            return refused
        group_id = request.match_info["group"]
        if group_id not in self.groups:
            return self._json(request, 404, {"error": {"code": "Request_ResourceNotFound", "message": "…"}})
        select = request.query.get("$select", "").split(",")
        found: list[dict[str, Any]] = []
        pending, seen = list(self.groups[group_id][1]), {group_id}
        while pending:
            member = pending.pop(0)
            if member in self.groups and member not in seen:
                seen.add(member)
                found.append({"@odata.type": "#microsoft.graph.group", "id": member})
                pending += self.groups[member][1]
            elif member in self.users:
                upn, mail = self.users[member]
                user = {
                    "@odata.type": "#microsoft.graph.user",
                    "id": member,
                    "userPrincipalName": upn,
                    "mail": mail,
                }
                found.append({k: v for k, v in user.items() if k in ("@odata.type", "id", *select)})
        return self._json(request, 200, {"value": found})

    async def _user(self, request: web.Request) -> web.Response:
        # https://learn.microsoft.com/en-us/graph/api/user-get
        refused = self._gate(request, {"$select"})
        if refused:
            return refused
        found = self.users.get(request.match_info["user"])
        if found is None:
            return self._json(request, 404, {"error": {"code": "Request_ResourceNotFound", "message": "…"}})
        return self._json(
            request, 200, {"id": request.match_info["user"], "userPrincipalName": found[0], "mail": found[1]}
        )

    async def _download(self, request: web.Request) -> web.Response:
        item = self.items.get(request.match_info["item"])
        if item is None or request.query.get("sig") != "pre-authenticated":
            return self._json(request, 404, {"error": {"code": "itemNotFound", "message": "…"}})
        self._log(request, 200)
        return web.Response(body=item.content, content_type="application/octet-stream")


@contextmanager
def serve_graph(context: ssl.SSLContext) -> Iterator[FakeGraph]:
    """Entra ID over HTTPS (with ``context``) and Graph over HTTP, until the ``with`` ends."""
    fake = FakeGraph()
    with (
        serve_in_thread(fake.entra_app(), ssl_context=context) as entra,
        serve_in_thread(fake.graph_app()) as base,
    ):
        fake.entra, fake.base = entra, base
        yield fake
