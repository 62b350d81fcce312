"""A fake Google OAuth token endpoint and Drive API v3, answering the requests the Drive connector
sends as the documented APIs answer them, and 400 to any other shape.

The token endpoint checks the service account's JWT as Google does: RS256, signed by the key the
account was given (``key_file`` writes the JSON key file, with ``token_uri`` pointing here), issued
by the account's email for Google's token audience, with the read-only Drive scope. Drive holds
one folder tree; every change bumps a counter, which is what a page token is. Each file's sharing
(``share``) is listed by ``permissions.list`` as Drive's Permission resources.
"""

import base64
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.fakes.server import serve_in_thread

ACCOUNT = "confer-indexer@kestrel-docs.iam.gserviceaccount.com"
ROOT = "folder-root"
FOLDER_TYPE = "application/vnd.google-apps.folder"
DOC_TYPE = "application/vnd.google-apps.document"


@dataclass
class File:
    id: str
    name: str
    mime: str
    parent: str
    content: bytes
    version: int = 1
    trashed: bool = False
    changed: int = 0
    # Drive Permission resources: {"type": "user"|"group"|"domain"|"anyone", "role": ..., ...}
    permissions: list[dict[str, Any]] = field(default_factory=list)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class FakeDrive:
    base: str = ""
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    files: dict[str, File] = field(default_factory=dict)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    failures: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    _counter: "itertools.count[int]" = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key_file(self, path: Path, key: rsa.RSAPrivateKey | None = None) -> Path:
        """The service account's JSON key file, as Google Cloud issues it, with ``token_uri`` here."""
        pem = (key or self.key).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        info = {
            "type": "service_account",
            "project_id": "kestrel-docs",
            "private_key_id": "key-1",
            "private_key": pem.decode(),
            "client_email": ACCOUNT,
            "client_id": "1234567890",
            "token_uri": f"{self.base}/token",
        }
        path.write_text(json.dumps(info))
        return path

    def put(
        self, file_id: str, name: str, content: str | bytes, *, parent: str = ROOT, mime: str = ""
    ) -> None:
        data = content.encode() if isinstance(content, str) else content
        with self._lock:
            old = self.files.get(file_id)
            version = old.version + 1 if old else 1
            self.files[file_id] = File(
                file_id, name, mime or "application/octet-stream", parent, data, version
            )
            self.files[file_id].changed = next(self._counter)

    def share(self, file_id: str, *permissions: dict[str, Any]) -> None:
        """Set a file's sharing (as Drive, without changing its version)."""
        with self._lock:
            self.files[file_id].permissions = [
                {"kind": "drive#permission", "id": f"perm{n}", "role": "reader", **p}
                for n, p in enumerate(permissions)
            ]

    def trash(self, file_id: str) -> None:
        with self._lock:
            self.files[file_id].trashed = True
            self.files[file_id].changed = next(self._counter)

    def fail(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures.setdefault(path, []).extend([(status, headers or {})] * times)

    def downloads(self) -> list[str]:
        """The file ids whose content was asked for (downloaded or exported), in order."""
        found = []
        for _, path, _ in self.requests:
            parts = path.split("?")[0].split("/")
            if "alt=media" in path or parts[-1] == "export":
                found.append(parts[4])
        return found

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/token", self._token)
        app.router.add_get("/drive/v3/changes/getStartPageToken", self._start)
        app.router.add_get("/drive/v3/changes", self._changes)
        app.router.add_get("/drive/v3/files", self._list)
        app.router.add_get("/drive/v3/files/{id}/export", self._export)
        app.router.add_get("/drive/v3/files/{id}/permissions", self._permissions)
        app.router.add_get("/drive/v3/files/{id}", self._file)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def _json(self, request: web.Request, status: int, body: dict[str, Any], **headers: str) -> web.Response:
        with self._lock:
            self.requests.append((request.method, request.path_qs, status))
        return web.json_response(body, status=status, headers=headers)

    def _bad(self, request: web.Request, message: str) -> web.Response:
        return self._json(
            request, 400, {"error": {"code": 400, "message": message, "errors": [{"reason": "badRequest"}]}}
        )

    async def _unknown(self, request: web.Request) -> web.Response:
        return self._bad(request, f"unknown request {request.method} {request.path}")

    async def _token(self, request: web.Request) -> web.Response:
        # https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests
        form = await request.post()
        if (
            set(form) != {"grant_type", "assertion"}
            or form["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer"
        ):
            return self._json(request, 400, {"error": "unsupported_grant_type"})
        try:
            header_b64, payload_b64, signature_b64 = str(form["assertion"]).split(".")
            header, claims = json.loads(_unb64(header_b64)), json.loads(_unb64(payload_b64))
            self.key.public_key().verify(
                _unb64(signature_b64),
                f"{header_b64}.{payload_b64}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (ValueError, InvalidSignature):
            return self._json(
                request, 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
            )
        # "aud ... is always https://oauth2.googleapis.com/token", wherever the request goes.
        audience = "https://oauth2.googleapis.com/token"
        if header.get("alg") != "RS256" or claims.get("iss") != ACCOUNT or claims.get("aud") != audience:
            return self._json(request, 400, {"error": "invalid_grant", "error_description": "Invalid JWT."})
        if claims.get("scope") != "https://www.googleapis.com/auth/drive.readonly":
            return self._json(request, 400, {"error": "invalid_scope", "error_description": "Bad scope."})
        token = f"ya29.fake-{len(self.tokens) + 1}"
        self.tokens.add(token)
        return self._json(request, 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _gate(self, request: web.Request, allowed: set[str]) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or header[7:] not in self.tokens:
            return self._json(request, 401, {"error": {"code": 401, "message": "Invalid Credentials"}})
        pending = self.failures.get(request.path)
        if pending:
            status, headers = pending.pop(0)
            # https://developers.google.com/drive/api/guides/limits (429, with or without Retry-After)
            return self._json(
                request, status, {"error": {"code": status, "message": "Rate Limit Exceeded"}}, **headers
            )
        if not set(request.query) <= allowed:
            return self._bad(request, f"unknown parameters {sorted(set(request.query) - allowed)}")
        return None

    def _resource(self, file: File) -> dict[str, Any]:
        # https://developers.google.com/drive/api/reference/rest/v3/files
        return {
            "id": file.id,
            "name": file.name,
            "mimeType": file.mime,
            "version": str(file.version),
            "webViewLink": f"https://drive.google.com/file/d/{file.id}/view",
            "parents": [file.parent],
            "trashed": file.trashed,
        }

    async def _start(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/changes/getStartPageToken
        refused = self._gate(request, {"supportsAllDrives", "driveId"})
        if refused:
            return refused
        with self._lock:
            now = next(self._counter)
        return self._json(request, 200, {"kind": "drive#startPageToken", "startPageToken": str(now)})

    async def _list(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/files/list
        refused = self._gate(
            request,
            {"q", "fields", "pageSize", "pageToken", "supportsAllDrives", "includeItemsFromAllDrives"},
        )
        if refused:
            return refused
        query = request.query.get("q", "")
        if not (query.startswith("'") and query.endswith("' in parents and trashed = false")):
            return self._bad(request, "Invalid Value: q")  # a query form this fake does not know
        parent = query[1 : query.index("'", 1)]
        size, skip = int(request.query.get("pageSize", "100")), int(request.query.get("pageToken", "0"))
        with self._lock:
            children = sorted(
                (f for f in self.files.values() if f.parent == parent and not f.trashed), key=lambda f: f.id
            )
        body: dict[str, Any] = {"files": [self._resource(f) for f in children[skip : skip + size]]}
        if skip + size < len(children):
            body["nextPageToken"] = str(skip + size)
        return self._json(request, 200, body)

    async def _changes(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/changes/list
        refused = self._gate(
            request, {"pageToken", "fields", "pageSize", "supportsAllDrives", "includeItemsFromAllDrives"}
        )
        if refused:
            return refused
        since = int(request.query["pageToken"])
        with self._lock:
            now = next(self._counter)
            changed = sorted((f for f in self.files.values() if f.changed >= since), key=lambda f: f.changed)
            entries = [{"fileId": f.id, "removed": False, "file": self._resource(f)} for f in changed]
        return self._json(request, 200, {"changes": entries, "newStartPageToken": str(now)})

    def _content(self, request: web.Request) -> File | web.Response:
        file = self.files.get(request.match_info["id"])
        if file is None or file.trashed:
            return self._json(request, 404, {"error": {"code": 404, "message": "File not found"}})
        return file

    async def _file(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/files/get (metadata, or alt=media)
        refused = self._gate(request, {"fields", "alt", "supportsAllDrives"})
        if refused:
            return refused
        file = self._content(request)
        if isinstance(file, web.Response):
            return file
        if request.query.get("alt") == "media":
            if file.mime.startswith("application/vnd.google-apps"):
                return self._bad(request, "Only files with binary content can be downloaded. Use Export")
            with self._lock:
                self.requests.append((request.method, request.path_qs, 200))
            return web.Response(body=file.content, content_type="application/octet-stream")
        return self._json(request, 200, self._resource(file))

    async def _permissions(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/permissions/list
        refused = self._gate(
            request, {"fields", "pageSize", "pageToken", "supportsAllDrives", "useDomainAdminAccess"}
        )
        if refused:
            return refused
        file = self._content(request)
        if isinstance(file, web.Response):
            return file
        wanted = request.query.get("fields", "")
        if not (wanted.startswith("nextPageToken,permissions(") and wanted.endswith(")")):
            return self._bad(request, "Invalid field selection fields")
        keys = set(wanted[len("nextPageToken,permissions(") : -1].split(","))
        size, skip = int(request.query.get("pageSize", "100")), int(request.query.get("pageToken", "0"))
        with self._lock:
            chosen = file.permissions[skip : skip + size]
        body: dict[str, Any] = {"permissions": [{k: v for k, v in p.items() if k in keys} for p in chosen]}
        if skip + size < len(file.permissions):
            body["nextPageToken"] = str(skip + size)
        return self._json(request, 200, body)

    async def _export(self, request: web.Request) -> web.Response:
        # https://developers.google.com/drive/api/reference/rest/v3/files/export
        refused = self._gate(request, {"mimeType"})
        if refused:
            return refused
        file = self._content(request)
        if isinstance(file, web.Response):
            return file
        if file.mime != DOC_TYPE or request.query.get("mimeType") != "text/plain":
            return self._bad(request, "Export only supports Docs Editors files and their formats")
        with self._lock:
            self.requests.append((request.method, request.path_qs, 200))
        return web.Response(body=file.content, content_type="text/plain")


@contextmanager
def serve_drive() -> Iterator[FakeDrive]:
    fake = FakeDrive()
    with serve_in_thread(fake.app()) as base:
        fake.base = base
        fake.files[ROOT] = File(ROOT, "Handbook", FOLDER_TYPE, "", b"")
        yield fake
