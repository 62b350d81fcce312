"""A small real web site on 127.0.0.1, served by aiohttp from files in a folder, in a thread of
its own (so that ``confer index``, which runs its own event loop, can crawl it).

aiohttp's ``FileResponse`` does what a web server does with files: ``ETag`` and ``Last-Modified``
on every answer, and ``304 Not Modified`` to ``If-None-Match`` / ``If-Modified-Since`` when the file
did not change (RFC 9110 §13.1). The site records every request; ``fail`` makes a path answer an
error status (with its headers) a number of times first.
"""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from tests.fakes.server import serve_in_thread


@dataclass
class Site:
    root: Path
    base: str = ""
    # Every request: (path with query, status answered, whether it was conditional).
    requests: list[tuple[str, int, bool]] = field(default_factory=list)
    failures: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _writes: int = 0

    def write(self, path: str, content: str | bytes) -> None:
        """Add or change a file; its ETag and Last-Modified change with it."""
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        # Each write a second later than the last: a change made within the same second still
        # changes Last-Modified (and the ETag aiohttp builds from it).
        self._writes += 1
        os.utime(target, (1_700_000_000 + self._writes, 1_700_000_000 + self._writes))

    def remove(self, path: str) -> None:
        (self.root / path.lstrip("/")).unlink()

    def fail(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures.setdefault(path, []).extend([(status, headers or {})] * times)

    def fetched(self) -> list[str]:
        with self._lock:
            return [path for path, _, _ in self.requests]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def answers(self) -> list[tuple[str, int, bool]]:
        with self._lock:
            return list(self.requests)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        conditional = "If-None-Match" in request.headers or "If-Modified-Since" in request.headers
        pending = self.failures.get(path)
        if pending:
            status, headers = pending.pop(0)
            self._record(request.path_qs, status, conditional)
            return web.Response(status=status, headers=headers, text="try later")
        file = self.root / path.lstrip("/")
        if path.endswith("/"):
            file = file / "index.html"
        if not file.is_file() or not file.resolve().is_relative_to(self.root.resolve()):
            self._record(request.path_qs, 404, conditional)
            raise web.HTTPNotFound()
        # Recorded with the status it is sent with (a 304 is decided as it is prepared).
        return web.FileResponse(file, headers={"Content-Type": "text/html"} if not file.suffix else None)

    async def _on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        if isinstance(response, web.FileResponse):
            conditional = "If-None-Match" in request.headers or "If-Modified-Since" in request.headers
            self._record(request.path_qs, response.status, conditional)

    def _record(self, path: str, status: int, conditional: bool) -> None:
        with self._lock:
            self.requests.append((path, status, conditional))


@contextmanager
def serve_site(root: Path) -> Iterator[Site]:
    """The site served until the ``with`` ends, on a random port."""
    site = Site(root=root)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", site._handle)
    app.on_response_prepare.append(site._on_prepare)
    with serve_in_thread(app) as base:
        site.base = base
        yield site
