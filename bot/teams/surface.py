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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
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
from bot.chat.audience import Asker, People
from bot.chat.feedback import REASONS, Place
from bot.chat.intake import Delivery, Intake, Message, Opener, Taken
from bot.chat.memory import ThreadKey
from bot.chat.ratelimit import build_teams_budget
from bot.errors import ChatCallError
from bot.settings import ConferSettings
from bot.teams.activities import ActivityError, TeamsMessage, parse_activity
from bot.teams.cards import card_activity, text_activity, trace_card
from bot.teams.connector import TeamsClient, TeamsConnector
from bot.teams.markup import neutralize
from bot.teams.people import TeamsDirectory
from bot.teams.thread import TeamsThread
from graph import Question

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


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
    intake: Intake
    connector: TeamsConnector
    auth: AgentAuthConfiguration | None  # None: local mode, unauthenticated activities
    status_interval: float = 1.0
    validator: JwtTokenValidator | None = None  # the SDK's, for ``auth``, unless one is given
    people: People = field(default_factory=People)  # who asks, who is in a channel (``bot.chat.audience``)

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
        if not parsed.addressed and parsed.vote is None and not parsed.trace:
            return web.Response(status=202)  # a group message not addressed to Confer
        delivery = f"teams:{parsed.place}:{parsed.activity_id}"
        if parsed.trace:
            # "How I found this": shown privately to the person who asked, within what this place
            # may search; anyone else who clicks is told privately that only the asker can open it.
            shown = await self.intake.trace(
                parsed.trace, place=parsed.place, platform="teams", user=parsed.user_id
            )
            activity = text_activity(shown) if isinstance(shown, str) else card_activity(trace_card(shown))
            self.intake.later(self._run(parsed, claims, self._private(parsed, activity)), name="confer-teams")
            return web.Response(status=202)
        if parsed.vote is not None:
            voted = await self.intake.vote(
                parsed.answer_id,
                parsed.vote,
                place=Place("teams", parsed.tenant_id or "", parsed.place),
                voter=parsed.user_id,
                delivery=delivery,
                reason=next((r for r in REASONS if r == parsed.reason), None),  # the 👎 form's
                comment=parsed.comment,
            )
            if not voted.duplicate:  # the vote is kept; only the thanks is lost when shutting down
                thanks = (
                    messages.TEAMS_FEEDBACK_THANKS if voted.record is not None else messages.FEEDBACK_NOT_KEPT
                )
                if voted.explained:
                    thanks = messages.FEEDBACK_REASON_THANKS
                self.intake.later(
                    self._run(parsed, claims, self._private(parsed, text_activity(thanks))),
                    name="confer-teams",
                )
            return web.Response(status=202)
        suggested = hashlib.sha256(parsed.text.encode()).hexdigest()[:16] if parsed.suggested else ""
        message = Message(
            text=parsed.text,
            place=parsed.place,
            surface="teams",
            # A reply chain in a channel (its conversation id names the chain) or a personal chat.
            key=ThreadKey("teams", parsed.tenant_id or "", parsed.place, parsed.conversation_id),
            delivery=delivery,
            commands=True,
            # each suggested question once per reply chain, whoever clicks it
            once=f"teams:suggest:{parsed.conversation_id}:{suggested}" if suggested else None,
            fresh=parsed.fresh,
            user=parsed.user_id,
            asker=self._asker(parsed, claims),
        )
        taken = await self.intake.take(message, self._opener(parsed, claims), neutralize=neutralize)
        if taken.outcome == "shutting_down":
            return web.json_response({"error": "shutting down"}, status=503)
        reply = self._reply_to(parsed, taken)
        if reply is not None and not self.intake.later(self._run(parsed, claims, reply), name="confer-teams"):
            return web.json_response({"error": "shutting down"}, status=503)
        return web.Response(status=202)

    def _asker(self, message: TeamsMessage, claims: ClaimsIdentity) -> Asker:
        """Who asked: the answer is for them alone in a personal chat, else for everyone in the
        channel or group chat, each named by the roster (``bot.chat.audience``)."""

        async def open_client() -> TeamsClient | None:
            return await self._open(message, claims)

        return Asker(
            user=message.user_id,
            place=message.place,
            private=message.conversation_type == "personal",
            people=self.people,
            directory=TeamsDirectory(open=open_client, conversation=message.place),
        )

    def _reply_to(self, message: TeamsMessage, taken: Taken) -> Job | None:
        """What to tell about a message that was not queued (nothing for a redelivery)."""
        if taken.outcome == "usage":
            return self._reply(message, messages.TEAMS_USAGE)
        if taken.outcome == "listing":
            return self._reply(message, messages.place_denied(()) if taken.refusal else taken.text)
        if taken.outcome == "refused" and taken.refusal is not None:
            return self._private(message, text_activity(messages.collection_access(taken.refusal)))
        if taken.outcome == "already_asked":
            return self._private(message, text_activity(messages.SUGGESTION_ALREADY_ASKED))
        return None

    def _opener(self, message: TeamsMessage, claims: ClaimsIdentity) -> Opener:
        @contextlib.asynccontextmanager
        async def open_thread(_question: Question) -> AsyncIterator[Delivery | None]:
            client = await self._open(message, claims)
            if client is None:
                yield None
                return
            try:
                thread = TeamsThread(client=client, message=message, config=self.intake.service.config)
                tell = self._private(message, text_activity(messages.NOT_POSTED))

                async def privately(text: str) -> None:
                    await self._private(message, text_activity(text))(client)

                yield Delivery(
                    thread,
                    status_interval=self.status_interval,
                    on_undelivered=lambda: tell(client),
                    privately=privately,
                )
            finally:
                await client.close()

        return open_thread

    async def _open(self, message: TeamsMessage, claims: ClaimsIdentity) -> TeamsClient | None:
        try:
            return await self.connector.open(claims=claims, service_url=message.service_url)
        except ChatCallError as error:
            logger.warning("could not reach teams", extra={"method": error.method, "error": error.error})
            return None

    async def _run(self, message: TeamsMessage, claims: ClaimsIdentity, job: Job) -> None:
        client = await self._open(message, claims)
        if client is None:
            return
        try:
            await job(client)
        finally:
            await client.close()

    def _reply(self, message: TeamsMessage, text: str) -> Job:
        async def job(client: TeamsClient) -> None:
            await TeamsThread(client=client, message=message, config=self.intake.service.config).say(text)

        return job

    def _private(self, message: TeamsMessage, activity: dict[str, Any]) -> Job:
        """Only the person who asked (or clicked) sees it: the personal chat itself, or a
        one-to-one chat."""

        async def job(client: TeamsClient) -> None:
            try:
                if message.conversation_type == "personal":
                    await client.reply(message.conversation_id, message.activity_id, activity)
                    return
                await client.send_private(
                    user_id=message.user_id,
                    bot=message.bot,
                    tenant_id=message.tenant_id,
                    activity=activity,
                )
            except ChatCallError as error:
                logger.warning("could not send a private message", extra={"error": error.error})

        return job


def build_teams_surface(
    settings: ConferSettings, *, intake: Intake, status_interval: float = 1.0
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
        factory=RestChannelServiceClientFactory(manager),
        metrics=intake.metrics,
        budget=build_teams_budget(),
        timeout=settings.teams_timeout,
    )
    return TeamsSurface(intake=intake, connector=connector, auth=auth, status_interval=status_interval)
