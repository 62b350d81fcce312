"""The Teams surface: ``POST /api/messages`` on Confer's server, answered through the chat core.

Incoming tokens are verified by the Microsoft 365 Agents SDK's ``JwtTokenValidator`` (Bot Framework
and Entra ID signing keys, audience = the app id), then bound to the activity they came with, as
Microsoft's Bot Connector authentication asks: the token's ``serviceurl`` claim must be the
activity's ``serviceUrl`` (Confer replies there, with its own credentials, so a valid token replayed
with another ``serviceUrl`` is refused), and the activity's tenant must be the configured one. In
local mode (Agents Playground) activities are unauthenticated and accepted only when their
``serviceUrl`` is on this machine. The request is acknowledged at once; the question is answered in
the background in the same reply chain.
"""

import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web
from microsoft_agents.authentication.msal import MsalConnectionManager
from microsoft_agents.hosting.core import RestChannelServiceClientFactory
from microsoft_agents.hosting.core.authorization import (
    AgentAuthConfiguration,
    AuthenticationConstants,
    AuthTypes,
    ClaimsIdentity,
    JwtTokenValidator,
)

from bot import messages
from bot.access import allowed_collections, policy_for
from bot.conversation import answer_in_thread
from bot.dedupe import EventDeduplicator
from bot.errors import ChatCallError, EmptyQuestionError
from bot.feedback import REASONS, FeedbackDesk, Place
from bot.memory import ThreadKey
from bot.metrics import ConferMetrics
from bot.progress import StatusState
from bot.ratelimit import build_teams_budget
from bot.render import AnswerFooter, collection_title
from bot.scheduler import QuestionScheduler, ShuttingDownError
from bot.service import ResearchService
from bot.settings import ConferSettings
from bot.teams.activities import ActivityError, TeamsMessage, parse_activity
from bot.teams.cards import answer_card, card_activity, status_card, status_lines, text_activity
from bot.teams.connector import TeamsClient, TeamsConnector
from bot.teams.markup import neutralize
from bot.threads import Conversations
from graph.models import Answer, Question
from graph.planning import CollectionAccessError

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass
class TeamsThread:
    """``ChatThread`` for one Teams reply chain: every post replies to the question's activity."""

    client: TeamsClient
    message: TeamsMessage
    service: ResearchService
    status_id: str | None = None
    answer_id: str | None = None

    shows_sentences = True  # the status card shows a model-written answer as it is verified

    async def post_status(self, state: StatusState) -> None:
        card = status_card(state, self.service.config)
        self.status_id = await self.client.reply(
            self.message.conversation_id, self.message.activity_id, card_activity(card)
        )

    async def edit_status(self, state: StatusState) -> None:
        if not self.status_id:
            raise ChatCallError(method="update", error="no status message")
        card = status_card(state, self.service.config)
        summary = status_lines(state, self.service.config)[0]
        await self.client.update(
            self.message.conversation_id, self.status_id, card_activity(card, summary=summary)
        )

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        card = answer_card(answer, self.service.config, footer)
        self.answer_id = await self.client.reply(
            self.message.conversation_id, self.message.activity_id, card_activity(card)
        )

    async def edit_answer(self, answer: Answer, footer: AnswerFooter) -> None:
        """The posted answer's card again with ``footer`` (its suggested follow-ups came later)."""
        if not self.answer_id:
            raise ChatCallError(method="update", error="no answer message")
        card = answer_card(answer, self.service.config, footer)
        await self.client.update(self.message.conversation_id, self.answer_id, card_activity(card))

    async def say(self, text: str) -> None:
        try:
            await self.client.reply(
                self.message.conversation_id, self.message.activity_id, text_activity(text)
            )
        except ChatCallError as error:
            logger.warning("could not post to teams", extra={"method": error.method, "error": error.error})


Job = Callable[[TeamsClient], Awaitable[None]]


def _same_url(one: str, other: str) -> bool:
    return one.strip().rstrip("/").casefold() == other.strip().rstrip("/").casefold()


def bound_to_activity(claims: ClaimsIdentity, message: TeamsMessage, tenant_id: str | None) -> bool:
    """Whether a verified token was issued for this activity: its ``serviceurl`` claim is the
    activity's ``serviceUrl`` (a token without the claim is refused), and the activity's tenant is
    ``tenant_id``, the one Confer is configured for."""
    claimed = claims.get_claim_value(AuthenticationConstants.SERVICE_URL_CLAIM)
    if not isinstance(claimed, str) or not _same_url(claimed, message.service_url):
        return False
    return bool(tenant_id and message.tenant_id and message.tenant_id.casefold() == tenant_id.casefold())


@dataclass
class TeamsSurface:
    service: ResearchService
    scheduler: QuestionScheduler
    dedupe: EventDeduplicator
    connector: TeamsConnector
    metrics: ConferMetrics
    auth: AgentAuthConfiguration | None  # None: local mode, unauthenticated activities
    status_interval: float = 1.0
    conversations: Conversations | None = None  # thread memory: reply chains and personal chats
    feedback: FeedbackDesk | None = None  # answers' records and votes (the chat core's store)
    validator: JwtTokenValidator | None = None  # the SDK's, for ``auth``, unless one is given

    @property
    def local(self) -> bool:
        return self.auth is None

    async def _claims(self, request: web.Request) -> ClaimsIdentity | None:
        if self.auth is None:
            return ClaimsIdentity({}, False, authentication_type="Anonymous")
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        self.validator = self.validator or JwtTokenValidator(self.auth)
        try:
            claims: ClaimsIdentity = await self.validator.validate_token(token.strip())
        except Exception:  # any invalid token: malformed, unsigned, wrong key, issuer or audience
            logger.warning("teams request with an invalid token")
            return None
        return claims

    async def handle(self, request: web.Request) -> web.Response:
        """``POST /api/messages``."""
        claims = await self._claims(request)
        if claims is None:
            return web.json_response({"error": "unauthorized"}, status=401)
        try:
            body = await request.json()
            parsed = parse_activity(body)
        except (ValueError, ActivityError):
            return web.json_response({"error": "not a valid activity"}, status=400)
        if not isinstance(parsed, TeamsMessage):
            return web.Response(status=200)
        if self.auth is not None and not bound_to_activity(claims, parsed, self.auth.TENANT_ID):
            logger.warning("teams token not issued for this activity's service url or tenant")
            return web.json_response({"error": "unauthorized"}, status=401)
        if self.local and urlsplit(parsed.service_url).hostname not in LOOPBACK_HOSTS:
            return web.json_response({"error": "local mode replies only to this machine"}, status=400)
        if not parsed.addressed and parsed.vote is None:
            return web.Response(status=202)  # a group message not addressed to Confer
        if not await self.dedupe.first_delivery(f"teams:{parsed.place}:{parsed.activity_id}"):
            self.metrics.events_deduplicated.inc()
            return web.Response(status=202)
        if parsed.vote is not None:
            desk = self.feedback or FeedbackDesk(store=None, metrics=self.metrics)
            place = Place("teams", parsed.tenant_id or "", parsed.place)
            stored = await desk.vote(parsed.answer_id, parsed.vote, place=place, voter=parsed.user_id)
            thanks = messages.TEAMS_FEEDBACK_THANKS if stored is not None else messages.FEEDBACK_NOT_KEPT
            reason = next((r for r in REASONS if r == parsed.reason), None)
            if stored is not None and reason is not None:  # the 👎 form was sent with it
                await desk.explain(stored.id, reason, parsed.comment)
                thanks = messages.FEEDBACK_REASON_THANKS
            with contextlib.suppress(ShuttingDownError):  # the vote is kept; only the thanks is lost
                self.scheduler.submit(
                    self._run(parsed, claims, self._private(parsed, thanks)), name="confer-teams"
                )
            return web.Response(status=202)
        if parsed.suggested:  # each suggested question once per reply chain, whoever clicks it
            digest = hashlib.sha256(parsed.text.encode()).hexdigest()[:16]
            if not await self.dedupe.first_delivery(f"teams:suggest:{parsed.conversation_id}:{digest}"):
                self.metrics.events_deduplicated.inc()
                with contextlib.suppress(ShuttingDownError):
                    self.scheduler.submit(
                        self._run(parsed, claims, self._private(parsed, messages.SUGGESTION_ALREADY_ASKED)),
                        name="confer-teams",
                    )
                return web.Response(status=202)
        job = self._job(parsed)
        try:
            self.scheduler.submit(self._run(parsed, claims, job), name="confer-teams")
        except ShuttingDownError:
            return web.json_response({"error": "shutting down"}, status=503)
        return web.Response(status=202)

    def _job(self, message: TeamsMessage) -> Job:
        word = message.text.strip().lower()
        if word in ("", "help"):
            return self._reply(message, messages.TEAMS_USAGE)
        if word == "list":
            return self._reply(message, self._collections_list(message.place))
        try:
            question = self.service.make_question(message.text, channel=message.place)
        except EmptyQuestionError:
            return self._reply(message, messages.TEAMS_USAGE)
        except CollectionAccessError as error:
            self.service.record_rejected("teams")
            return self._private(message, messages.collection_access(error))
        return self._answer(message, question)

    async def _run(self, message: TeamsMessage, claims: ClaimsIdentity, job: Job) -> None:
        try:
            client = await self.connector.open(claims=claims, service_url=message.service_url)
        except ChatCallError as error:
            logger.warning("could not reach teams", extra={"method": error.method, "error": error.error})
            return
        try:
            await job(client)
        finally:
            await client.close()

    def _reply(self, message: TeamsMessage, text: str) -> Job:
        async def job(client: TeamsClient) -> None:
            await TeamsThread(client=client, message=message, service=self.service).say(text)

        return job

    def _private(self, message: TeamsMessage, text: str) -> Job:
        """Only the person who asked sees it: the personal chat itself, or a one-to-one chat."""
        if message.conversation_type == "personal":
            return self._reply(message, text)

        async def job(client: TeamsClient) -> None:
            try:
                await client.send_private(
                    user_id=message.user_id,
                    bot=message.bot,
                    tenant_id=message.tenant_id,
                    activity=text_activity(text),
                )
            except ChatCallError as error:
                logger.warning("could not send a private message", extra={"error": error.error})

        return job

    def _answer(self, message: TeamsMessage, question: Question) -> Job:
        async def job(client: TeamsClient) -> None:
            thread = TeamsThread(client=client, message=message, service=self.service)
            conversations, prepared = self.conversations, None
            # A reply chain in a channel (its conversation id names the chain) or a personal chat.
            key = ThreadKey("teams", message.tenant_id or "", message.place, message.conversation_id)
            if conversations is not None:
                try:
                    prepared = await conversations.prepare(
                        self.service, key, message.text, channel=message.place
                    )
                except (EmptyQuestionError, CollectionAccessError):
                    prepared = None  # checked before it was queued; the question stands as asked
                if prepared is not None:
                    await conversations.begin(key, prepared)
            answer = await answer_in_thread(
                thread,
                service=self.service,
                scheduler=self.scheduler,
                question=prepared.question if prepared is not None else question,
                surface="teams",
                status_interval=self.status_interval,
                searching=prepared.searching if prepared is not None else "",
                key=key,
                feedback=self.feedback,
            )
            if conversations is not None and prepared is not None:
                await conversations.remember(key, prepared, answer)

        return job

    def _collections_list(self, place: str) -> str:
        config = self.service.config
        if policy_for(config, place) is None:
            return messages.place_denied(())
        entries = []
        for name in allowed_collections(config, place):
            collection = config.get(name)
            if collection is not None:
                entries.append(
                    (name, neutralize(collection_title(config, name)), neutralize(collection.description))
                )
        return messages.collections_list(entries)


def build_teams_surface(
    settings: ConferSettings,
    *,
    service: ResearchService,
    scheduler: QuestionScheduler,
    dedupe: EventDeduplicator,
    metrics: ConferMetrics,
    status_interval: float = 1.0,
) -> TeamsSurface:
    """Local mode (no credentials) or the SDK's MSAL service connection from validated settings."""
    logging.getLogger("microsoft_agents").setLevel(logging.WARNING)  # it logs ids on every call at INFO
    auth: AgentAuthConfiguration | None = None
    manager = None
    if not settings.teams_local:
        assert settings.teams_app_id and settings.teams_tenant_id
        secret = settings.teams_app_secret
        auth = AgentAuthConfiguration(
            auth_type=AuthTypes.client_secret if secret is not None else AuthTypes.certificate,
            client_id=settings.teams_app_id,
            tenant_id=settings.teams_tenant_id,
            client_secret=secret.get_secret_value() if secret is not None else None,
            cert_pfx_file=str(settings.teams_cert_pfx_file) if secret is None else None,
            connection_name="SERVICE_CONNECTION",
        )
        manager = MsalConnectionManager(connections_configurations={"SERVICE_CONNECTION": auth})
    connector = TeamsConnector(
        factory=RestChannelServiceClientFactory(manager), metrics=metrics, budget=build_teams_budget()
    )
    return TeamsSurface(
        service=service,
        scheduler=scheduler,
        dedupe=dedupe,
        connector=connector,
        metrics=metrics,
        auth=auth,
        status_interval=status_interval,
    )
