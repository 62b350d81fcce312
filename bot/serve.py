"""``confer serve``: one server for every enabled surface: Slack (HTTP Events API, or Socket Mode with
SLACK_APP_TOKEN) and Teams (``/api/messages``; Agents Playground in local mode), each enabled by its
credentials."""

import asyncio
import contextlib
import gc
import logging
import signal
from dataclasses import dataclass, field

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import build_service
from bot.metrics import ConferMetrics, build_metrics
from bot.scheduler import QuestionScheduler
from bot.service import ResearchService
from bot.settings import ConferSettings, SettingsError
from bot.slack.app import SlackResponder, authorize_once, build_slack_app
from bot.slack.dedupe import EventDeduplicator, build_deduplicator
from bot.slack.gateway import SlackGateway, share_session
from bot.teams.surface import TeamsSurface, build_teams_surface
from bot.web import build_web_app
from retrieval.backends import SearchBackend

logger = logging.getLogger(__name__)


def check_slack_settings(settings: ConferSettings) -> None:
    """At least one surface must be enabled; a Slack surface needs its token and a way to verify."""
    if settings.teams_enabled and settings.slack_bot_token is None and not _slack_partly_set(settings):
        return
    missing = ["SLACK_BOT_TOKEN"] if settings.slack_bot_token is None else []
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        missing.append("SLACK_SIGNING_SECRET")
    if missing:
        problems = [f"{name}: required by confer serve" for name in missing]
        if not settings.teams_enabled:
            problems.append("or Teams: its app id, secret and tenant, or CONFER_TEAMS_LOCAL=true")
        raise SettingsError(problems)


def _slack_partly_set(settings: ConferSettings) -> bool:
    return settings.slack_signing_secret is not None or settings.slack_app_token is not None


@dataclass
class SlackServer:
    """Everything ``confer serve`` runs, startable and stoppable in-process (tests use it too)."""

    settings: ConferSettings
    service: ResearchService
    scheduler: QuestionScheduler
    dedupe: EventDeduplicator
    client: AsyncWebClient | None
    metrics: ConferMetrics
    host: str = "0.0.0.0"  # noqa: S104 (a server in a container listens on every interface)
    status_interval: float = 1.0
    port: int = 0
    _runner: web.AppRunner | None = None
    _socket: AsyncSocketModeHandler | None = None
    _stopping: bool = field(default=False)
    gateway: SlackGateway | None = None
    teams: TeamsSurface | None = None

    async def ready(self) -> bool:
        return not self._stopping and self.scheduler.accepting and await self.service.backend.health()

    async def start(self) -> None:
        settings = self.settings
        bolt = await self._build_bolt() if self.client is not None else None
        socket_mode = bolt is not None and settings.slack_app_token is not None
        app = build_web_app(
            bolt=None if socket_mode else bolt,
            metrics=self.metrics,
            ready=self.ready,
            teams=self.teams.handle if self.teams is not None else None,
        )
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        if server is not None and getattr(server, "sockets", None):
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        if socket_mode:
            assert settings.slack_app_token is not None and bolt is not None
            self._socket = AsyncSocketModeHandler(bolt, settings.slack_app_token.get_secret_value())
            await self._socket.connect_async()  # type: ignore[no-untyped-call]
        logger.info(
            "confer serve listening",
            extra={
                "port": self.port,
                "socket_mode": socket_mode,
                "slack": self.client is not None,
                "teams": "local" if self.teams is not None and self.teams.local else self.teams is not None,
            },
        )

    async def _build_bolt(self) -> AsyncApp:
        settings = self.settings
        assert self.client is not None
        gateway = self.gateway = SlackGateway(client=self.client, metrics=self.metrics)
        identity = await self._connect_slack(gateway)
        responder = SlackResponder(
            service=self.service,
            gateway=gateway,
            scheduler=self.scheduler,
            status_interval=self.status_interval,
        )
        secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
        return build_slack_app(
            signing_secret=secret,
            client=self.client,
            responder=responder,
            dedupe=self.dedupe,
            metrics=self.metrics,
            identity=identity,
        )

    async def _connect_slack(self, gateway: SlackGateway) -> AuthorizeResult:
        """One pooled HTTP session for every Web API call (closed in ``stop``), and the bot's
        identity asked once; a rejected token stops the start here."""
        session = share_session(gateway.client)
        try:
            return await authorize_once(gateway)
        except BaseException:
            await session.close()
            raise

    async def stop(self) -> int:
        """Stop taking questions, let running ones finish within the grace period, then close."""
        self._stopping = True
        interrupted = await self.scheduler.drain(self.settings.shutdown_grace)
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
        if self._runner is not None:
            await self._runner.cleanup()
        await self.dedupe.close()
        await self.service.close()
        session = getattr(self.client, "session", None)
        if session is not None:
            await session.close()
        return interrupted


def build_server(
    settings: ConferSettings,
    *,
    status_interval: float = 1.0,
    backend: SearchBackend | None = None,
    host: str | None = None,
) -> SlackServer:
    check_slack_settings(settings)
    metrics = build_metrics()
    client = None
    if settings.slack_bot_token is not None:
        base_url = (settings.slack_api_url + "/") if settings.slack_api_url else AsyncWebClient.BASE_URL
        client = AsyncWebClient(token=settings.slack_bot_token.get_secret_value(), base_url=base_url)
    redis_url = settings.redis_url.get_secret_value() if settings.redis_url else None
    service = build_service(settings, metrics=metrics, backend=backend)
    scheduler = QuestionScheduler(max_concurrent=settings.max_concurrent_questions)
    dedupe = build_deduplicator(redis_url=redis_url, ttl=settings.dedupe_ttl)
    teams = None
    if settings.teams_enabled:
        teams = build_teams_surface(
            settings,
            service=service,
            scheduler=scheduler,
            dedupe=dedupe,
            metrics=metrics,
            status_interval=status_interval,
        )
    return SlackServer(
        settings=settings,
        service=service,
        scheduler=scheduler,
        dedupe=dedupe,
        client=client,
        metrics=metrics,
        port=settings.port,
        status_interval=status_interval,
        host=host or settings.listen_host,
        teams=teams,
    )


def settle_heap() -> None:
    """After start-up: collect once, then move every surviving object (modules, the graph, the
    clients) out of the collector's reach, so later full collections scan only what requests
    create: shorter pauses of the event loop, and no pause spent on start-up objects."""
    gc.collect()
    gc.freeze()


async def run_server(settings: ConferSettings) -> int:
    server = build_server(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    settle_heap()
    await stop.wait()
    logger.info("stopping: finishing questions in flight")
    interrupted = await server.stop()
    logger.info("stopped", extra={"interrupted": interrupted})
    return 0
