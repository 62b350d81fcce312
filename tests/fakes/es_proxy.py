"""A test-only proxy that lets the real ``elasticsearch`` client talk to ``osmem-server``.

The 8.x client sends ``application/vnd.elasticsearch+json; compatible-with=8`` and insists on an
``X-Elastic-Product: Elasticsearch`` reply header; osmem wants ``application/json`` and sends no
such header. The proxy rewrites both and forwards everything else unchanged. It runs its own event
loop in a thread on 127.0.0.1 at a random port, so sync and async tests can share it.
"""

import asyncio
import threading
from types import TracebackType

from aiohttp import ClientSession, web

_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}


def _plain_media_type(value: str) -> str:
    if "vnd.elasticsearch" not in value:
        return value
    return "application/x-ndjson" if "x-ndjson" in value else "application/json"


class MediaTypeProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="es-proxy", daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        for name in ("Content-Type", "Accept"):
            if name in headers:
                headers[name] = _plain_media_type(headers[name])
        body = await request.read()
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body or None, headers=headers
        ) as upstream:
            payload = await upstream.read()
            response = web.Response(status=upstream.status, body=payload)
            response.headers["Content-Type"] = upstream.headers.get("Content-Type", "application/json")
            response.headers["X-Elastic-Product"] = "Elasticsearch"
            return response

    async def _start(self) -> None:
        self._session = ClientSession()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{port}"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def start(self) -> "MediaTypeProxy":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("proxy did not start")
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> "MediaTypeProxy":
        return self.start()

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        self.stop()
