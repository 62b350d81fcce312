"""Serving a fake's aiohttp app on 127.0.0.1 at a random port."""

from aiohttp import web


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    assert site._server is not None
    port: int = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    return runner, port
