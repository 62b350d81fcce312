"""The HTTP server: ``POST /slack/events``, ``POST /api/messages`` (Teams), ``GET /metrics``,
``GET /healthz``, ``GET /readyz``."""

from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.metrics import ConferMetrics

ReadyCheck = Callable[[], Awaitable[bool]]
Handler = Callable[[web.Request], Awaitable[web.Response]]


def build_web_app(
    *,
    metrics: ConferMetrics,
    ready: ReadyCheck,
    slack: Handler | None = None,
    teams: Handler | None = None,
) -> web.Application:
    """Each enabled surface's route (its handler verifies its own requests) and the operator's pages."""
    app = web.Application(client_max_size=1024 * 1024)

    async def metrics_page(_: web.Request) -> web.Response:
        body = generate_latest(metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        is_ready = await ready()
        metrics.ready.set(1 if is_ready else 0)
        if is_ready:
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "not ready"}, status=503)

    async def metrics_with_readiness(request: web.Request) -> web.Response:
        metrics.ready.set(1 if await ready() else 0)  # fresh on every scrape
        return await metrics_page(request)

    if slack is not None:
        app.router.add_post("/slack/events", slack)
    if teams is not None:
        app.router.add_post("/api/messages", teams)
    app.router.add_get("/metrics", metrics_with_readiness)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
