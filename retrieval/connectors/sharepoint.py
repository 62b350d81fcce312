"""The SharePoint / OneDrive connector: a document library or a user's OneDrive, whole or one
folder, through Microsoft Graph with an app's client credentials (MSAL), incremental by delta.

- Token: MSAL's client-credentials flow for ``https://graph.microsoft.com/.default`` (application
  permission ``Sites.Read.All``, or ``Sites.Selected`` granted on the sites indexed; ``Files.Read.All``
  for OneDrives). https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow
- The drive: ``GET /sites/{host}:/{path}`` then ``GET /sites/{id}/drives`` by name, or
  ``GET /users/{user}/drive``. https://learn.microsoft.com/en-us/graph/api/site-getbypath
  https://learn.microsoft.com/en-us/graph/api/drive-list https://learn.microsoft.com/en-us/graph/api/drive-get
- Changes: ``GET /drives/{id}/root/delta``, page by page (``@odata.nextLink``) to its
  ``@odata.deltaLink``, the cursor of the next sync; items carry a ``deleted`` facet when deleted.
  Delta reports the whole drive (a folder's own delta is OneDrive personal only): items outside the
  folder are left out, and an item moved out of it is deleted. A 410 means the cursor expired: the
  sync starts over from a full listing. https://learn.microsoft.com/en-us/graph/api/driveitem-delta
- A file: ``GET /drives/{id}/items/{item}/content``, answered with a redirect to a pre-authenticated
  download address. https://learn.microsoft.com/en-us/graph/api/driveitem-get-content
- Its version is its ``cTag`` (changes with the content, not with a rename alone).
- 429 and 503 with Retry-After are waited out. https://learn.microsoft.com/en-us/graph/throttling
- Permissions (``permissions: true``): a file's effective permissions, its own and inherited
  (``GET /drives/{id}/items/{item}/permissions``); each grants reading to the user (their user
  principal name and mail), the Entra group (its members, nested ones too, by
  ``transitiveMembers``) or the SharePoint group (kept by its name: Graph does not list its
  members) it names, and a sharing link to the people it was given to (``grantedToIdentitiesV2``):
  a link anyone with it may open does not make the file readable to everyone.
  https://learn.microsoft.com/en-us/graph/api/driveitem-list-permissions
  https://learn.microsoft.com/en-us/graph/api/resources/permission
  https://learn.microsoft.com/en-us/graph/api/group-list-transitivemembers
  https://learn.microsoft.com/en-us/graph/api/user-get
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from retrieval.audience import principal, readers_of
from retrieval.collections import SharePointSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument, Readers
from retrieval.connectors.convert import convert
from retrieval.connectors.credentials import SHAREPOINT_VARIABLES, SharePointCredentials
from retrieval.connectors.http import PoliteClient, Response, get_or_fail, json_object
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES

logger = logging.getLogger(__name__)

GRAPH_SCOPE = "https://graph.microsoft.com/.default"


class SharePointConnector:
    def __init__(
        self,
        *,
        spec: SharePointSource,
        collection: str,
        client: PoliteClient,
        credentials: SharePointCredentials,
    ) -> None:
        self.spec = spec
        self.collection = collection
        self.client = client
        self.credentials = credentials
        self.graph = credentials.graph_url.rstrip("/")
        self.folder = "/" + spec.folder.strip("/") if spec.folder.strip("/") else ""
        self._app: Any = None
        self._drive: str | None = None
        self._items: dict[str, dict[str, Any]] = {}
        self._members: dict[str, tuple[str, ...]] = {}  # an Entra group's members, per sync
        self._users: dict[str, tuple[str, ...]] = {}  # a user's names by their object id

    @property
    def key(self) -> str:
        return f"sharepoint:{self.label}"

    @property
    def permissions(self) -> bool:
        return self.spec.permissions

    @property
    def label(self) -> str:
        where = self.spec.site if self.spec.site else f"OneDrive of {self.spec.user}"
        drive = f" {self.spec.drive}" if self.spec.site else ""
        return f"{where}{drive}{self.folder or ''}"

    def _error(self, problem: SourceProblem, detail: str = "") -> SourceError:
        return SourceError(
            collection=self.collection, source=f"sharepoint {self.label}", problem=problem, detail=detail
        )

    async def _token(self) -> str:
        """An access token for Graph from MSAL (which keeps it until it nearly expires)."""
        creds = self.credentials
        if not (creds.tenant_id and creds.client_id and creds.client_secret):
            raise self._error("credentials", f"set {SHAREPOINT_VARIABLES}")
        if self._app is None:
            import msal

            authority = f"{creds.authority_host.rstrip('/')}/{creds.tenant_id}"
            default = creds.authority_host.rstrip("/") == "https://login.microsoftonline.com"
            try:
                self._app = await asyncio.to_thread(
                    msal.ConfidentialClientApplication,
                    creds.client_id,
                    client_credential=creds.client_secret.get_secret_value(),
                    authority=authority,
                    validate_authority=default,  # another host is a national cloud's or a test's
                )
            except ValueError as exc:  # the tenant's OpenID configuration could not be read
                raise self._error(
                    "credentials", f"no tenant {creds.tenant_id}: check {SHAREPOINT_VARIABLES}"
                ) from exc
            except OSError as exc:
                raise self._error("unreachable", f"{creds.authority_host} ({type(exc).__name__})") from None
        try:
            result = await asyncio.to_thread(self._app.acquire_token_for_client, scopes=[GRAPH_SCOPE])
        except OSError as exc:
            raise self._error("unreachable", f"{creds.authority_host} ({type(exc).__name__})") from None
        token = result.get("access_token") if isinstance(result, dict) else None
        if not token:
            error = result.get("error", "no token") if isinstance(result, dict) else "no token"
            raise self._error("credentials", f"Entra ID answered {error}: check {SHAREPOINT_VARIABLES}")
        return str(token)

    async def _get(self, url: str) -> Response:
        headers = {"Authorization": f"Bearer {await self._token()}", "Accept": "application/json"}
        return await get_or_fail(self.client, url, headers=headers, fail=self._error)

    async def _json(self, url: str) -> dict[str, Any]:
        return self._object(await self._get(url), url)

    def _object(self, response: Response, url: str) -> dict[str, Any]:
        if response.status in (401, 403):
            raise self._error(
                "credentials", f"HTTP {response.status}: grant the app Sites.Read.All or Sites.Selected"
            )
        if response.status == 404:
            raise self._error("not_found", f"HTTP 404 at {urlsplit(url).path}")
        return json_object(response, fail=self._error)

    async def check(self) -> None:
        """The credentials give a token, and the library or OneDrive is found."""
        await self._drive_id()

    async def _drive_id(self) -> str:
        if self._drive is not None:
            return self._drive
        if self.spec.user:
            drive = await self._json(f"{self.graph}/users/{quote(self.spec.user)}/drive")
            self._drive = str(drive["id"])
            return self._drive
        assert self.spec.site is not None
        parts = urlsplit(self.spec.site)
        site = await self._json(f"{self.graph}/sites/{parts.hostname}:{parts.path.rstrip('/') or '/'}")
        drives = await self._json(f"{self.graph}/sites/{site['id']}/drives")
        for drive in drives.get("value", []):
            if drive.get("name") == self.spec.drive:
                self._drive = str(drive["id"])
                return self._drive
        names = ", ".join(str(d.get("name")) for d in drives.get("value", []))
        raise self._error("not_found", f"no library '{self.spec.drive}' (the site has: {names})")

    def _inside(self, item: Mapping[str, Any]) -> bool:
        path = str(item.get("parentReference", {}).get("path", ""))
        folder = path.split(":", 1)[1] if ":" in path else ""
        return not self.folder or folder == self.folder or folder.startswith(self.folder + "/")

    async def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        url = cursor or f"{self.graph}/drives/{await self._drive_id()}/root/delta"
        self._members, self._users = {}, {}
        while True:
            response = await self._get(url)
            if response.status == 410 and cursor is not None:  # the cursor expired: start over
                logger.info("delta cursor expired, listing the drive again", extra={"source": self.label})
                url, cursor = f"{self.graph}/drives/{await self._drive_id()}/root/delta", None
                continue
            body = self._object(response, url)
            for item in body.get("value", []):
                item_id = str(item["id"])
                if "deleted" in item or ("file" in item and not self._inside(item)):
                    if item_id in known:
                        yield Change(doc_id=item_id, deleted=True)
                    continue
                suffix = PurePosixPath(str(item.get("name", ""))).suffix.lower()
                if "file" not in item or suffix not in SUPPORTED_SUFFIXES:
                    continue
                stored = known.get(item_id)
                if stored is not None and stored.version == str(item.get("cTag", "")):
                    continue
                self._items[item_id] = item
                yield Change(doc_id=item_id)
            if "@odata.nextLink" in body:
                url = str(body["@odata.nextLink"])
                continue
            yield Change(doc_id="", cursor=str(body["@odata.deltaLink"]))
            return

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        item = self._items.pop(change.doc_id)
        drive = await self._drive_id()
        response = await self._get(f"{self.graph}/drives/{drive}/items/{change.doc_id}/content")
        if response.status == 404:
            return FetchResult("gone", change.doc_id, detail="HTTP 404")
        if response.status != 200:
            problem: SourceProblem = "interrupted" if response.status >= 500 else "refused"
            raise self._error(problem, f"HTTP {response.status} for {item.get('name')}")
        name = str(item["name"])
        url = str(item.get("webUrl", ""))
        try:
            documents = convert(response.body, suffix=PurePosixPath(name).suffix.lower(), source=url, url=url)
        except DocumentLoadError as exc:
            logger.info("no text: %s", exc.reason, extra={"source": url})
            documents = ()
        readers = await self.readers(change.doc_id) if self.permissions else None
        return FetchResult("fetched", change.doc_id, str(item.get("cTag", "")), documents, readers=readers)

    async def readers(self, doc_id: str) -> Readers:
        """Who the file's permissions let read it now; nobody when it is gone."""
        url: str | None = f"{self.graph}/drives/{await self._drive_id()}/items/{doc_id}/permissions"
        names: list[str] = []
        while url is not None:
            response = await self._get(url)
            if response.status == 404:
                return ()
            body = self._object(response, url)
            for permission in body.get("value", []):
                if not set(permission.get("roles", [])) & {"read", "write", "owner"}:
                    continue
                for granted in [permission.get("grantedToV2"), *permission.get("grantedToIdentitiesV2", [])]:
                    if isinstance(granted, dict):
                        names += await self._granted(granted)
            url = str(body["@odata.nextLink"]) if "@odata.nextLink" in body else None
        return readers_of(names)

    async def _granted(self, identities: Mapping[str, Any]) -> list[str]:
        """The principals one identity set names: a user, an Entra group's members, a SharePoint
        group's name."""
        names: list[str] = []
        user, site_user = identities.get("user"), identities.get("siteUser")
        if isinstance(user, dict):
            names += await self._user(user, site_user if isinstance(site_user, dict) else {})
        elif isinstance(site_user, dict):
            names += _login_name(site_user)
        group, site_group = identities.get("group"), identities.get("siteGroup")
        if isinstance(group, dict) and group.get("id"):
            names += await self._group(str(group["id"]), str(group.get("displayName", "")))
        elif isinstance(site_group, dict):
            names.append(str(site_group.get("displayName") or site_group.get("loginName") or ""))
        return [n for n in names if n]

    async def _user(self, user: Mapping[str, Any], site_user: Mapping[str, Any]) -> list[str]:
        """A user's user principal name and mail: from the permission when it has them, else looked
        up by the user's object id."""
        named = [str(user.get("email") or ""), *_login_name(site_user)]
        if any(named) or not user.get("id"):
            return [n for n in named if n]
        user_id = str(user["id"])
        if user_id not in self._users:
            url = f"{self.graph}/users/{quote(user_id)}?$select=userPrincipalName,mail"
            response = await self._get(url)
            # Not found, or not readable without User.Read.All: the user is left out (never more access).
            found = self._object(response, url) if response.status not in (403, 404) else {}
            self._users[user_id] = tuple(str(found.get(k) or "") for k in ("userPrincipalName", "mail"))
        return [n for n in self._users[user_id] if n]

    async def _group(self, group_id: str, name: str) -> tuple[str, ...]:
        """An Entra group's members, nested groups' members too: each one's user principal name and
        mail; the group's name when Graph does not list them to this app."""
        if group_id not in self._members:
            members: list[str] = []
            url: str | None = (
                f"{self.graph}/groups/{quote(group_id)}/transitiveMembers?$select=userPrincipalName,mail"
            )
            while url is not None:
                response = await self._get(url)
                if response.status in (403, 404):
                    members = [principal(name)] if name else []
                    break
                body = self._object(response, url)
                for member in body.get("value", []):
                    if member.get("@odata.type", "#microsoft.graph.user") == "#microsoft.graph.user":
                        members += [str(member.get(k) or "") for k in ("userPrincipalName", "mail")]
                url = str(body["@odata.nextLink"]) if "@odata.nextLink" in body else None
            self._members[group_id] = tuple(m for m in members if m)
        return self._members[group_id]

    async def existing(self) -> set[str] | None:
        return None  # delta reports deletions itself

    async def close(self) -> None:
        await self.client.close()
        if self._app is not None:
            self._app.http_client.close()  # MSAL's requests session


def _login_name(site_user: Mapping[str, Any]) -> list[str]:
    """The user principal name in a SharePoint user's claims login (``i:0#.f|membership|upn``)."""
    login = str(site_user.get("loginName") or "")
    return [login.rsplit("|", 1)[1]] if login.startswith("i:0#.f|membership|") else []
