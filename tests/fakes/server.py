"""Serving a fake's aiohttp app on 127.0.0.1 at a random port: in the test's event loop, or in a
thread of its own for code under test that runs its own loop (``confer index``)."""

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    assert site._server is not None
    port: int = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    return runner, port


@contextmanager
def serve_in_thread(app: web.Application) -> Iterator[str]:
    """``app`` served from a thread with its own event loop until the ``with`` ends; yields its
    base address (``http://127.0.0.1:PORT``)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner, port = asyncio.run_coroutine_threadsafe(serve_locally(app), loop).result(timeout=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
