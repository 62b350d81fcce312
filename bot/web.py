"""The HTTP server: ``POST /slack/events``, ``POST /api/messages`` (Teams), ``GET /metrics``,
``GET /healthz``, ``GET /readyz``."""

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.chat.turns import TurnGate
from bot.metrics import ConferMetrics
from bot.slack.acks import AckFirstApp
from bot.slack.verify import Rejection, check_request

logger = logging.getLogger(__name__)

ReadyCheck = Callable[[], Awaitable[bool]]
Handler = Callable[[web.Request], Awaitable[web.Response]]
# Slack requests handled in one turn of the event loop; a burst's others wait for the next turns
# (``bot.chat.turns``). About 0.3 ms each: about 10 ms of the loop in one block at most. (16 a turn made
# the loop's blocks shorter still but let other work in between, which delayed the acks more.)
SLACK_REQUESTS_PER_TURN = 32


def build_web_app(
    *,
    bolt: AckFirstApp | None,
    metrics: ConferMetrics,
    ready: ReadyCheck,
    teams: Handler | None = None,
    slack_signing_secret: str = "",
) -> web.Application:
    """``slack_signing_secret`` verifies ``/slack/events`` before Bolt parses anything."""
    app = web.Application(client_max_size=1024 * 1024)

    verifier = SignatureVerifier(slack_signing_secret) if slack_signing_secret else None
    turns = TurnGate(SLACK_REQUESTS_PER_TURN)

    async def slack_events(request: web.Request) -> web.Response:
        started = time.perf_counter()
        assert bolt is not None and verifier is not None
        body = await request.read()
        await turns.enter()
        verified = check_request(verifier, body, request.headers)
        if isinstance(verified, Rejection):
            metrics.slack_requests_rejected.labels(verified.reason).inc()
            logger.warning(
                "refused a request to /slack/events",
                extra={"reason": verified.reason, "status": verified.status, "peer": request.remote},
            )
            return web.Response(status=verified.status)
        text, query, headers = verified.text, request.query_string, request.headers

        def bolt_request() -> AsyncBoltRequest:  # what Bolt's aiohttp adapter builds
            return AsyncBoltRequest(body=text, query=query, headers=headers)  # type: ignore[arg-type]

        if bolt.acks_first(verified.envelope):
            # Acked with the empty 200 Bolt would answer; Bolt's request (which parses the body
            # again) is built when its turn comes, after the burst's acks.
            bolt.dispatch_later(bolt_request)
            metrics.ack_duration.observe(time.perf_counter() - started)
            return web.Response(status=200, body=b"", content_type="text/plain")
        try:
            response = await bolt.async_dispatch(bolt_request())
        except Exception as error:  # a signed payload Bolt could not handle: no traceback per request
            metrics.slack_requests_rejected.labels("malformed").inc()
            logger.warning("could not handle a signed slack request", extra={"error": type(error).__name__})
            return web.Response(status=400)
        metrics.ack_duration.observe(time.perf_counter() - started)
        return await to_aiohttp_response(response)

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

    if bolt is not None and verifier is not None:
        app.router.add_post("/slack/events", slack_events)
    if teams is not None:
        app.router.add_post("/api/messages", teams)
    app.router.add_get("/metrics", metrics_with_readiness)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
