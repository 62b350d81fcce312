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

from bot import messages
from bot.chat.conversations import Conversations
from bot.chat.dedupe import EventDeduplicator, build_deduplicator
from bot.chat.feedback import FeedbackDesk, FeedbackStore, FeedbackUnavailableError, build_feedback_store
from bot.chat.intake import Intake
from bot.chat.memory import MemoryUnavailableError, ThreadMemory, build_thread_memory
from bot.chat.scheduler import QuestionScheduler
from bot.chat.service import ResearchService
from bot.chat.stores import CONNECT_SECONDS
from bot.metrics import ConferMetrics, build_metrics
from bot.settings import ConferSettings, SettingsError
from bot.slack.acks import AckWindow
from bot.slack.gateway import SlackGateway
from bot.slack.surface import SlackSurface, build_slack_client
from bot.teams.surface import TeamsSurface, build_teams_surface
from bot.web import build_web_app
from bot.wiring import build_service
from retrieval.backends import SearchBackend
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

EVENTS_FLUSH_SECONDS = 2.0  # at shutdown, for the events already acked to reach the scheduler


def check_serve_settings(settings: ConferSettings) -> None:
    """At least one surface must be enabled; a Slack surface needs its token and a way to verify
    requests (the signing secret in HTTP mode, the app-level token in Socket Mode). The error names
    every variable that would fix it."""
    if settings.teams_enabled and settings.slack_bot_token is None and not _slack_partly_set(settings):
        return
    if not settings.teams_enabled and settings.slack_bot_token is None and not _slack_partly_set(settings):
        raise SettingsError([messages.SERVE_NEEDS_A_SURFACE])
    problems = []
    if settings.slack_bot_token is None:
        problems.append(messages.SERVE_NEEDS_SLACK_BOT)
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        problems.append(messages.SERVE_NEEDS_SLACK_VERIFICATION)
    if problems:
        raise SettingsError(problems)


def _slack_partly_set(settings: ConferSettings) -> bool:
    return settings.slack_signing_secret is not None or settings.slack_app_token is not None


@dataclass
class ConferServer:
    """Everything ``confer serve`` runs, startable and stoppable in-process (tests use it too)."""

    settings: ConferSettings
    service: ResearchService
    scheduler: QuestionScheduler
    dedupe: EventDeduplicator
    slack: SlackSurface | None
    metrics: ConferMetrics
    intake: Intake
    host: str = "0.0.0.0"  # noqa: S104 (a server in a container listens on every interface)
    status_interval: float = 1.0
    port: int = 0
    _runner: web.AppRunner | None = None
    _stopping: bool = field(default=False)
    teams: TeamsSurface | None = None
    memory: ThreadMemory | None = None
    feedback: FeedbackStore | None = None
    store_connect_seconds: float = CONNECT_SECONDS  # how long PostgreSQL is tried at start
    acks: AckWindow = field(default_factory=AckWindow)

    @property
    def gateway(self) -> SlackGateway | None:
        """Slack's Web API gateway, once started."""
        return self.slack.gateway if self.slack is not None else None

    async def ready(self) -> bool:
        """Taking questions, the search backend answers, and every collection has passages."""
        if self._stopping or not self.scheduler.accepting or not await self.service.backend.health():
            return False
        return not await self.unindexed()

    async def unindexed(self) -> list[str]:
        """Collections whose index is missing or holds no passages."""
        backend = self.service.backend
        missing = []
        for collection in self.service.config.collections:
            try:
                stats = await backend.stats(collection)
            except ConferError:  # an unreadable index counts as none
                stats = None
            if stats is None or stats.passages == 0:
                missing.append(collection.name)
        return missing

    async def start(self) -> None:
        await self.dedupe.check()  # REDIS_URL set but unreachable: stop here, not answer twice later
        await self._open_memory()
        slack = self.slack
        if slack is not None:
            slack.acks = self.acks
            await slack.start(self.intake, status_interval=self.status_interval)
        route = slack.route() if slack is not None else None
        app = build_web_app(
            metrics=self.metrics,
            ready=self.ready,
            slack=route,
            teams=self.teams.handle if self.teams is not None else None,
        )
        if route is not None:
            app.middlewares.append(self.acks.middleware)  # counts the acks in flight
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        if server is not None and getattr(server, "sockets", None):
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        if slack is not None:
            await slack.connect()  # Socket Mode
        unindexed = await self.unindexed()
        if unindexed:
            logger.warning(
                "not ready: no passages indexed for %s; run `confer index` (with the same "
                "CONFER_DATA_DIR or ELASTICSEARCH_URL) and /readyz turns ready",
                ", ".join(unindexed),
            )
        logger.info(
            "confer serve listening",
            extra={
                "port": self.port,
                "socket_mode": self.slack is not None and self.slack.socket_mode,
                "slack": self.slack is not None,
                "teams": "local" if self.teams is not None and self.teams.local else self.teams is not None,
            },
        )

    async def _open_memory(self) -> None:
        """Thread memory (SQLite in CONFER_DATA_DIR, or PostgreSQL): unreachable stops the start."""
        settings = self.settings
        url = settings.database_url.get_secret_value() if settings.database_url else None
        try:
            self.memory = await build_thread_memory(
                data_dir=settings.data_dir,
                database_url=url,
                ttl_days=settings.thread_ttl_days,
                connect_seconds=self.store_connect_seconds,
            )
        except MemoryUnavailableError as exc:
            raise SettingsError([str(exc)]) from None
        self.memory.start_sweeping()
        try:
            self.feedback = await build_feedback_store(
                data_dir=settings.data_dir,
                database_url=url,
                ttl_days=settings.thread_ttl_days,
                connect_seconds=self.store_connect_seconds,
                postgres=self.memory.postgres,  # one PostgreSQL pool for both
                trace_days=settings.trace_retention_days,
            )
        except FeedbackUnavailableError as exc:
            raise SettingsError([str(exc)]) from None
        self.feedback.start_sweeping()
        self.intake.conversations = Conversations(memory=self.memory, metrics=self.metrics)
        self.intake.feedback = FeedbackDesk(store=self.feedback, metrics=self.metrics)

    async def stop(self) -> int:
        """Stop taking questions, let running ones finish within the grace period, then close."""
        self._stopping = True
        await self.acks.flush(EVENTS_FLUSH_SECONDS)  # events acked a moment ago queue their questions
        interrupted = await self.scheduler.drain(self.settings.shutdown_grace)
        if self.slack is not None:
            await self.slack.disconnect()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.acks.flush(EVENTS_FLUSH_SECONDS)  # those acked while draining tell their askers
        await self.dedupe.close()
        if self.feedback is not None:  # first: with PostgreSQL it uses the memory's pool
            await self.feedback.close()
        if self.memory is not None:
            await self.memory.close()
        await self.service.close()
        if self.slack is not None:
            await self.slack.close()
        return interrupted


def build_server(
    settings: ConferSettings,
    *,
    status_interval: float = 1.0,
    backend: SearchBackend | None = None,
    host: str | None = None,
) -> ConferServer:
    check_serve_settings(settings)
    metrics = build_metrics()
    client = build_slack_client(settings)
    redis_url = settings.redis_url.get_secret_value() if settings.redis_url else None
    service = build_service(settings, metrics=metrics, backend=backend)
    scheduler = QuestionScheduler(max_concurrent=settings.max_concurrent_questions)
    dedupe = build_deduplicator(redis_url=redis_url, ttl=settings.dedupe_ttl, metrics=metrics)
    intake = Intake(service=service, scheduler=scheduler, dedupe=dedupe, metrics=metrics)
    teams = None
    if settings.teams_enabled:
        teams = build_teams_surface(settings, intake=intake, status_interval=status_interval)
    return ConferServer(
        settings=settings,
        service=service,
        scheduler=scheduler,
        dedupe=dedupe,
        slack=SlackSurface(client=client, settings=settings, metrics=metrics) if client is not None else None,
        metrics=metrics,
        intake=intake,
        port=settings.port,
        status_interval=status_interval,
        host=host or settings.listen_host,
        teams=teams,
    )


# Net allocations between young collections (CPython's default: 700): fewer young collections find
# fewer objects still in use, so less is promoted and scanned again (a question at 8 collections:
# about 1 ms of CPU less, 4 %, alternating questions in one process); each scans at most this many.
YOUNG_COLLECTION_AFTER = 10_000
# Middle collections between full ones (CPython's default: 10): with 10 young collections to a
# middle one, about 7 million net allocations between full collections, as 700 × 10 × 1000 gave.
FULL_COLLECTION_EVERY = 70


def settle_heap() -> None:
    """After start-up: collect once, then move every surviving object (modules, the graph, the
    clients) out of the collector's reach, and make full collections rare: a full collection
    scans everything a burst left alive (status writers, answers in flight) and stopped the event
    loop for 30–50 ms in the middle of a burst in `make bench`; young collections, which find
    nearly all garbage, run every ``YOUNG_COLLECTION_AFTER`` allocations."""
    gc.collect()
    gc.freeze()
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_AFTER, middle, FULL_COLLECTION_EVERY)


async def run_server(settings: ConferSettings) -> int:
    server = build_server(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except BaseException:
        if server.feedback is not None:  # first: with PostgreSQL it uses the memory's pool
            await server.feedback.close()
        if server.memory is not None:  # its database thread would keep the process alive
            await server.memory.close()
        raise
    settle_heap()
    await stop.wait()
    logger.info("stopping: finishing questions in flight")
    interrupted = await server.stop()
    logger.info("stopped", extra={"interrupted": interrupted})
    return 0
