"""The Google Drive connector: a folder and its subfolders, in My Drive or a shared drive, read by
a service account (google-auth) through the Drive REST API v3, incremental by its changes feed.

- Token: the service account's signed JWT exchanged at the key file's ``token_uri`` for a token of
  scope ``drive.readonly``. https://developers.google.com/identity/protocols/oauth2/service-account
- First sync: ``changes.getStartPageToken`` first (so that what changes while listing is in the next
  sync), then the folder tree listed with ``files.list`` (``'ID' in parents and trashed = false``).
  https://developers.google.com/drive/api/reference/rest/v3/changes/getStartPageToken
  https://developers.google.com/drive/api/reference/rest/v3/files/list
- Next syncs: ``changes.list`` from the stored page token to its ``newStartPageToken``; a change
  ``removed``, trashed, or moved out of the folder tree deletes the file.
  https://developers.google.com/drive/api/reference/rest/v3/changes/list
- Google Docs are exported as plain text, Sheets as xlsx, Slides as pptx (``files.export``);
  other files are downloaded (``alt=media``) when Confer reads their type.
  https://developers.google.com/drive/api/reference/rest/v3/files/export
  https://developers.google.com/drive/api/guides/manage-downloads
- A file's version is its ``version`` (it grows with every change), so an unchanged file is not
  downloaded again. 429 (and 503) with Retry-After are waited out, without it backed off.
  https://developers.google.com/drive/api/guides/limits
- Permissions (``permissions: true``): a file's permissions (``permissions.list``): a user or a
  group by its email (Drive does not list a group's members), a domain (``domain:example.com``) and
  anyone (everyone) when the file can be found by them (``allowFileDiscovery``); a file shared by
  link only is read by those who have the link, not by everyone in the domain.
  https://developers.google.com/drive/api/reference/rest/v3/permissions/list
  https://developers.google.com/drive/api/reference/rest/v3/permissions#Permission
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlencode

from retrieval.audience import DOMAIN_PREFIX, EVERYONE, readers_of
from retrieval.collections import DriveSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument, Readers
from retrieval.connectors.convert import convert
from retrieval.connectors.credentials import DRIVE_VARIABLES, DriveCredentials
from retrieval.connectors.http import PoliteClient, Response, get_or_fail, json_object
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES

logger = logging.getLogger(__name__)

SCOPE = "https://www.googleapis.com/auth/drive.readonly"
FOLDER = "application/vnd.google-apps.folder"
# Google's own formats, exported as a type Confer reads.
EXPORTS = {
    "application/vnd.google-apps.document": ("text/plain", ".txt"),
    "application/vnd.google-apps.spreadsheet": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ".xlsx",
    ),
    "application/vnd.google-apps.presentation": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ".pptx",
    ),
}
FILE_FIELDS = "id,name,mimeType,version,webViewLink,parents,trashed"
PERMISSION_FIELDS = "type,role,emailAddress,domain,allowFileDiscovery,deleted"
ALL_DRIVES = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}


class DriveConnector:
    def __init__(
        self, *, spec: DriveSource, collection: str, client: PoliteClient, credentials: DriveCredentials
    ) -> None:
        self.spec = spec
        self.collection = collection
        self.client = client
        self.credentials = credentials
        self.api = f"{credentials.api_url.rstrip('/')}/drive/v3"
        self._google: Any = None
        self._session: Any = None
        self._files: dict[str, dict[str, Any]] = {}
        self._listed: set[str] | None = None

    @property
    def key(self) -> str:
        return f"gdrive:{self.spec.folder}"

    @property
    def label(self) -> str:
        return f"Google Drive folder {self.spec.folder}"

    @property
    def permissions(self) -> bool:
        return self.spec.permissions

    def _error(self, problem: SourceProblem, detail: str = "") -> SourceError:
        return SourceError(
            collection=self.collection, source=f"gdrive {self.label}", problem=problem, detail=detail
        )

    async def _token(self) -> str:
        import google.auth.exceptions
        import requests
        from google.auth.transport.requests import Request
        from google.oauth2 import service_account

        if self._google is None:
            if self.credentials.key_file is None:
                raise self._error("credentials", f"set {DRIVE_VARIABLES}")
            try:
                self._google = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
                    str(self.credentials.key_file), scopes=[SCOPE]
                )
            except (OSError, ValueError, KeyError) as exc:
                reason = f"cannot read {self.credentials.key_file} ({type(exc).__name__})"
                raise self._error("credentials", reason) from None
            self._session = requests.Session()
        if not self._google.valid:
            try:
                await asyncio.to_thread(self._google.refresh, Request(self._session))
            except google.auth.exceptions.RefreshError as exc:
                error = exc.args[0] if exc.args else "refused"
                raise self._error(
                    "credentials", f"the token exchange answered {error}: check {DRIVE_VARIABLES}"
                ) from None
            except google.auth.exceptions.TransportError:
                raise self._error("unreachable", "the token address") from None
        return str(self._google.token)

    async def _get(self, path: str, params: Mapping[str, str]) -> Response:
        headers = {"Authorization": f"Bearer {await self._token()}"}
        url = f"{self.api}/{path}?{urlencode(params)}"
        return await get_or_fail(self.client, url, headers=headers, fail=self._error)

    async def _json(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        response = await self._get(path, params)
        if response.status in (401, 403):
            raise self._error(
                "credentials", f"HTTP {response.status}: share the folder with the service account"
            )
        if response.status == 404:
            raise self._error(
                "not_found", "HTTP 404: check the folder id and that it is shared with the account"
            )
        return json_object(response, fail=self._error)

    async def check(self) -> None:
        """The key works, and the folder is visible to the service account."""
        folder = await self._json(
            f"files/{self.spec.folder}", {"fields": "id,mimeType", "supportsAllDrives": "true"}
        )
        if folder.get("mimeType") != FOLDER:
            raise self._error("not_found", f"{self.spec.folder} is not a folder")

    def _readable(self, file: Mapping[str, Any]) -> bool:
        return (
            file.get("mimeType") in EXPORTS
            or PurePosixPath(str(file.get("name", ""))).suffix.lower() in SUPPORTED_SUFFIXES
        )

    def _wanted(self, file: Mapping[str, Any], known: Mapping[str, KnownDocument]) -> Change | None:
        stored = known.get(str(file["id"]))
        if not self._readable(file) or (stored is not None and stored.version == str(file.get("version"))):
            return None
        self._files[str(file["id"])] = dict(file)
        return Change(doc_id=str(file["id"]))

    async def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        if cursor is None:
            start = await self._json("changes/getStartPageToken", {"supportsAllDrives": "true"})
            tree = [self.spec.folder]
            self._listed = set()
            for folder in tree:  # grows as subfolders are found
                token = ""
                while True:
                    params = {
                        "q": f"'{folder}' in parents and trashed = false",
                        "fields": f"nextPageToken,files({FILE_FIELDS})",
                        "pageSize": "100",
                        **ALL_DRIVES,
                        **({"pageToken": token} if token else {}),
                    }
                    body = await self._json("files", params)
                    for file in body.get("files", []):
                        if file.get("mimeType") == FOLDER:
                            tree.append(str(file["id"]))
                            continue
                        if self._readable(file):
                            self._listed.add(str(file["id"]))
                        change = self._wanted(file, known)
                        if change is not None:
                            yield change
                    token = str(body.get("nextPageToken", ""))
                    if not token:
                        break
            yield Change("", cursor=json.dumps({"page_token": start["startPageToken"], "folders": tree}))
            return
        self._listed = None
        saved = json.loads(cursor)
        folders = set(saved["folders"])
        token = str(saved["page_token"])
        while True:
            params = {
                "pageToken": token,
                "fields": f"nextPageToken,newStartPageToken,changes(fileId,removed,file({FILE_FIELDS}))",
                "pageSize": "100",
                **ALL_DRIVES,
            }
            body = await self._json("changes", params)
            for entry in body.get("changes", []):
                file_id = str(entry["fileId"])
                file = entry.get("file") or {}
                inside = bool(folders & set(file.get("parents", [])))
                if entry.get("removed") or file.get("trashed") or not inside:
                    if file_id in known:
                        yield Change(doc_id=file_id, deleted=True)
                    continue
                if file.get("mimeType") == FOLDER:
                    folders.add(file_id)
                    continue
                change = self._wanted(file, known)
                if change is not None:
                    yield change
            if "newStartPageToken" in body:
                state = {"page_token": body["newStartPageToken"], "folders": sorted(folders)}
                yield Change("", cursor=json.dumps(state))
                return
            token = str(body["nextPageToken"])

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        file = self._files.pop(change.doc_id)
        mime = str(file.get("mimeType", ""))
        name = str(file.get("name", ""))
        if mime in EXPORTS:
            export, suffix = EXPORTS[mime]
            response = await self._get(f"files/{change.doc_id}/export", {"mimeType": export})
        else:
            suffix = PurePosixPath(name).suffix.lower()
            response = await self._get(
                f"files/{change.doc_id}", {"alt": "media", "supportsAllDrives": "true"}
            )
        if response.status == 404:
            return FetchResult("gone", change.doc_id, detail="HTTP 404")
        if response.status != 200:
            problem: SourceProblem = "interrupted" if response.status >= 500 else "refused"
            raise self._error(problem, f"HTTP {response.status} for {name}")
        url = str(file.get("webViewLink", ""))
        try:
            documents = convert(response.body, suffix=suffix, source=url, url=url, name=name)
        except DocumentLoadError as exc:
            logger.info("no text: %s", exc.reason, extra={"source": url})
            documents = ()
        readers = await self.readers(change.doc_id) if self.permissions else None
        return FetchResult("fetched", change.doc_id, str(file.get("version", "")), documents, readers=readers)

    async def readers(self, doc_id: str) -> Readers:
        """Who the file's sharing lets read it now; nobody when it is gone."""
        names: list[str] = []
        token = ""
        while True:
            params = {
                "fields": f"nextPageToken,permissions({PERMISSION_FIELDS})",
                "pageSize": "100",
                "supportsAllDrives": "true",
                **({"pageToken": token} if token else {}),
            }
            response = await self._get(f"files/{doc_id}/permissions", params)
            if response.status == 404:
                return ()
            if response.status in (401, 403):
                raise self._error(
                    "credentials", f"HTTP {response.status}: cannot read the sharing of {doc_id}"
                )
            body = json_object(response, fail=self._error)
            for permission in body.get("permissions", []):
                if permission.get("deleted"):
                    continue
                kind = permission.get("type")
                if kind in ("user", "group"):
                    names.append(str(permission.get("emailAddress") or ""))
                elif kind == "domain" and permission.get("allowFileDiscovery"):
                    names.append(DOMAIN_PREFIX + str(permission.get("domain") or ""))
                elif kind == "anyone" and permission.get("allowFileDiscovery"):
                    names.append(EVERYONE)
            token = str(body.get("nextPageToken", ""))
            if not token:
                return readers_of(n for n in names if n and n != DOMAIN_PREFIX)

    async def existing(self) -> set[str] | None:
        return self._listed  # after a full listing; the changes feed reports deletions itself

    async def close(self) -> None:
        await self.client.close()
        if self._session is not None:
            self._session.close()
