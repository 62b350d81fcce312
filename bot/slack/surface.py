"""Slack on Confer's server: the Web API client, the Bolt app over the chat core's intake, and how
events arrive: ``POST /slack/events`` (verified before Bolt parses anything, acked first) or Socket
Mode with ``SLACK_APP_TOKEN``. The server composes it; every Slack SDK call stays in ``bot/slack``."""

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web
from redis.asyncio import Redis
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.chat.intake import Intake
from bot.chat.ratelimit import build_budget
from bot.chat.turns import TurnGate
from bot.metrics import ConferMetrics
from bot.settings import ConferSettings
from bot.slack.acks import AckFirstApp, AckWindow
from bot.slack.app import SlackResponder, authorize_once, build_slack_app
from bot.slack.gateway import APPEND_WINDOWS, UPDATE_WINDOWS, SlackGateway, share_session
from bot.slack.verify import Rejection, check_request

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.Response]]

# Slack requests handled in one turn of the event loop; a burst's others wait for the next turns
# (``bot.chat.turns``). About 0.3 ms each: about 10 ms of the loop in one block at most. (16 a turn made
# the loop's blocks shorter still but let other work in between, which delayed the acks more.)
SLACK_REQUESTS_PER_TURN = 32


def build_slack_client(settings: ConferSettings) -> AsyncWebClient | None:
    """The Web API client for ``SLACK_BOT_TOKEN`` (``SLACK_API_URL``: another Web API, a test's or a
    proxy's); ``None`` without a token."""
    if settings.slack_bot_token is None:
        return None
    base_url = (settings.slack_api_url + "/") if settings.slack_api_url else AsyncWebClient.BASE_URL
    # No default resends: the gateway installs its own handlers, for what is safe to send twice.
    return AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=base_url,
        timeout=settings.slack_timeout,
        retry_handlers=[],
    )


@dataclass
class SlackSurface:
    client: AsyncWebClient
    settings: ConferSettings
    metrics: ConferMetrics
    acks: AckWindow = field(default_factory=AckWindow)
    gateway: SlackGateway | None = None
    bolt: AckFirstApp | None = None
    _socket: AsyncSocketModeHandler | None = None
    _budget_redis: Redis | None = None

    @property
    def socket_mode(self) -> bool:
        return self.settings.slack_app_token is not None

    async def start(self, intake: Intake, *, status_interval: float) -> None:
        """The gateway (its workspace budgets shared through Redis when ``REDIS_URL`` is set), the
        bot's identity asked once (a rejected token stops the start here), and the Bolt app."""
        settings = self.settings
        redis = None
        if settings.redis_url is not None:
            redis = self._budget_redis = Redis.from_url(settings.redis_url.get_secret_value())
        gateway = self.gateway = SlackGateway(
            client=self.client,
            metrics=self.metrics,
            update_budget=build_budget(name="chat.update", windows=UPDATE_WINDOWS, redis=redis),
            append_budget=build_budget(name="chat.appendStream", windows=APPEND_WINDOWS, redis=redis),
        )
        # One pooled HTTP session for every Web API call, closed in ``close``.
        session = share_session(gateway.client)
        try:
            identity = await authorize_once(gateway)
        except BaseException:
            await session.close()
            raise
        responder = SlackResponder(
            service=intake.service,
            gateway=gateway,
            status_interval=status_interval,
            progress=settings.slack_progress,
        )
        secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
        self.bolt = build_slack_app(
            signing_secret=secret,
            client=self.client,
            responder=responder,
            intake=intake,
            identity=identity,
            acks=self.acks,
            allowed_bots=settings.slack_allowed_bots,
            followups=settings.thread_followups,
        )

    def route(self) -> Handler | None:
        """The ``POST /slack/events`` handler, or ``None`` in Socket Mode."""
        secret = self.settings.slack_signing_secret
        if self.bolt is None or self.socket_mode or secret is None:
            return None
        return events_route(self.bolt, self.metrics, SignatureVerifier(secret.get_secret_value()))

    async def connect(self) -> None:
        """In Socket Mode, open the connection events arrive on."""
        if self.socket_mode and self.bolt is not None:
            assert self.settings.slack_app_token is not None
            self._socket = AsyncSocketModeHandler(self.bolt, self.settings.slack_app_token.get_secret_value())
            await self._socket.connect_async()  # type: ignore[no-untyped-call]

    async def disconnect(self) -> None:
        """No more events (Socket Mode's connection closed)."""
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self._budget_redis is not None:
            await self._budget_redis.aclose()
        session = getattr(self.client, "session", None)
        if session is not None:
            await session.close()


def events_route(bolt: AckFirstApp, metrics: ConferMetrics, verifier: SignatureVerifier) -> Handler:
    """``POST /slack/events``: verified by its signature before Bolt parses anything, the events
    Confer listens to acked at once and handed to Bolt after the burst's acks."""
    turns = TurnGate(SLACK_REQUESTS_PER_TURN)

    async def slack_events(request: web.Request) -> web.Response:
        started = time.perf_counter()
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

    return slack_events
