"""Every call to the Bot Framework connector goes through here.

The Microsoft 365 Agents SDK builds the client (``RestChannelServiceClientFactory``: an MSAL token for
the service connection, or none for an unauthenticated local activity) and makes the HTTP calls; this
module adds what a chat core needs around them: the per-conversation rate budget (Teams allows
about 7 messages a second and 60 per 30 s), waits on 429, 412, 502 and 504 (``Retry-After`` when
given), metrics per method and outcome, and failures as ``ChatCallError`` with no library text.
The SDK's connector client does not resend anything; the resending is tenacity's (``AsyncRetrying``),
the budget, the 429 pause shared by the conversation and the metrics are Confer's. No resend waits
past the question's delivery deadline (``bot.chat.deadline``).
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import ClientConnectorError, ClientError, ClientResponseError
from microsoft_agents.activity import Activity, ChannelAccount, ConversationParameters
from microsoft_agents.hosting.core import RestChannelServiceClientFactory
from microsoft_agents.hosting.core.authorization import AuthenticationConstants, ClaimsIdentity
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.stop import stop_base

from bot.chat import deadline
from bot.chat.ratelimit import RateBudget, RetryLaterError
from bot.errors import ChatCallError
from bot.metrics import ConferMetrics

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({412, 429, 502, 504})
# Calls that post something new: one whose connection broke after it was sent, or that timed out,
# may have been applied, so it is never resent (the connector has no way to look for it).
POSTING = frozenset({"reply", "send", "create_conversation"})


class TeamsCallError(ChatCallError):
    """A connector call that failed for good. ``uncertain``: a post whose connection broke after it
    was sent, or that timed out; Teams may have shown it."""

    def __init__(self, *, method: str, error: str, uncertain: bool = False) -> None:
        super().__init__(method=method, error=error)
        self.uncertain = uncertain


def _resendable(method: str) -> Callable[[BaseException], bool]:
    """Resent: a retryable status, a connection never made, and for an update (the whole state
    again) a lost connection or a time-out too."""

    def resend(error: BaseException) -> bool:
        if isinstance(error, ClientResponseError | ClientConnectorError):
            return True
        return method not in POSTING and isinstance(error, ClientError | TimeoutError)

    return resend


MAX_RETRY_AFTER = 60.0
T = TypeVar("T")


def conversation_key(conversation_id: str) -> str:
    """A channel's reply chains share the channel's budget: ``19:…@thread.tacv2;messageid=1`` → ``19:…``."""
    return conversation_id.split(";", 1)[0]


def _pause(state: RetryCallState) -> float:
    """Before the next attempt: a retryable status's ``Retry-After`` (or a doubling pause), or
    0.5 s, 1 s, 1.5 s after a lost connection or a time-out."""
    error = state.outcome.exception() if state.outcome is not None else None
    if isinstance(error, ClientResponseError):
        return _retry_after(error, state.attempt_number)
    return 0.5 * state.attempt_number


class _PastDeadline(stop_base):
    """Stop when the pause before the next attempt would end after the question's delivery deadline."""

    def __call__(self, retry_state: RetryCallState) -> bool:
        return not deadline.allows(_pause(retry_state))


def _retry_after(error: ClientResponseError, attempt: int) -> float:
    header = error.headers.get("Retry-After") if error.headers else None
    try:
        seconds = float(header) if header else 0.0
    except ValueError:
        seconds = 0.0
    return min(seconds if seconds > 0 else 0.5 * 2 ** (attempt - 1), MAX_RETRY_AFTER)


@dataclass
class TeamsConnector:
    """Opens clients for one service URL; shares the rate budget and metrics between them."""

    factory: RestChannelServiceClientFactory
    metrics: ConferMetrics
    budget: RateBudget
    attempts: int = 4
    timeout: float = 30.0  # seconds one call may take before it counts as lost

    async def open(self, *, claims: Any, service_url: str) -> "TeamsClient":
        anonymous = isinstance(claims, ClaimsIdentity) and not claims.is_authenticated
        try:
            client = await self.factory.create_connector_client(
                None,
                claims,
                service_url,
                AuthenticationConstants.AGENTS_SDK_SCOPE,
                claims.get_token_scope(),
                anonymous,
            )
        except (ValueError, ClientError) as exc:  # no token for the service connection
            self.metrics.teams_api_calls.labels("token", "error").inc()
            raise ChatCallError(method="token", error=type(exc).__name__) from None
        return TeamsClient(client=client, connector=self)


@dataclass
class TeamsClient:
    client: Any  # the SDK's ConnectorClient (untyped package)
    connector: TeamsConnector

    async def _call(
        self, method: str, conversation_id: str, call: Callable[[], Awaitable[T]], *, retry_later: bool
    ) -> T:
        """``call()`` within the conversation's budget, resent by tenacity on a retryable status
        (after ``Retry-After`` or a doubling pause), a lost connection or a time-out; each failed
        attempt counted. ``retry_later``: a retryable status is the caller's to handle instead."""
        metrics = self.connector.metrics
        budget = self.connector.budget
        key = conversation_key(conversation_id)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.connector.attempts) | _PastDeadline(),
            wait=_pause,
            retry=retry_if_exception(_resendable(method)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await budget.acquire(key)
                    try:
                        async with asyncio.timeout(self.connector.timeout):
                            result = await call()
                    except ClientResponseError as error:
                        if error.status not in RETRY_STATUSES:
                            metrics.teams_api_calls.labels(method, "error").inc()
                            raise ChatCallError(method=method, error=f"http_{error.status}") from None
                        wait = _retry_after(error, attempt.retry_state.attempt_number)
                        outcome = "rate_limited" if error.status == 429 else f"retry_{error.status}"
                        metrics.teams_api_calls.labels(method, outcome).inc()
                        if error.status == 429:
                            metrics.teams_rate_limited.labels(method).inc()
                            await budget.pause(key, wait)
                        if retry_later:
                            raise RetryLaterError(method=method, retry_after=wait) from None
                        raise  # tenacity waits the same ``_retry_after`` (``_pause``) and resends
                    except (ClientError, TimeoutError):
                        metrics.teams_api_calls.labels(method, "error").inc()
                        raise
                    metrics.teams_api_calls.labels(method, "ok").inc()
                    return result
        except ClientResponseError as error:  # a retryable status, still there at the last attempt
            metrics.teams_api_calls.labels(method, "error").inc()
            raise ChatCallError(method=method, error=f"http_{error.status}") from None
        except (ClientError, TimeoutError) as error:
            uncertain = method in POSTING and not isinstance(error, ClientConnectorError)
            raise TeamsCallError(method=method, error=type(error).__name__, uncertain=uncertain) from None
        raise ChatCallError(method=method, error="retries exhausted")  # not reached: tenacity reraises

    async def reply(self, conversation_id: str, reply_to: str, activity: dict[str, Any]) -> str:
        """Post in the reply chain of ``reply_to``; returns the new activity's id."""
        body = Activity.model_validate(activity)
        response = await self._call(
            "reply",
            conversation_id,
            lambda: self.client.conversations.reply_to_activity(conversation_id, reply_to, body),
            retry_later=False,
        )
        return str(getattr(response, "id", "") or "")

    async def update(
        self, conversation_id: str, activity_id: str, activity: dict[str, Any], *, retry_later: bool = True
    ) -> None:
        """Replace an activity in place (``PUT …/activities/{id}``); the body carries the full state."""
        body = Activity.model_validate({**activity, "id": activity_id})
        await self._call(
            "update",
            conversation_id,
            lambda: self.client.conversations.update_activity(conversation_id, activity_id, body),
            retry_later=retry_later,
        )

    async def member(self, conversation_id: str, user_id: str) -> dict[str, Any]:
        """One person of a conversation as Teams knows them (``userPrincipalName``, ``email``…):
        ``GET /v3/conversations/{id}/members/{userId}``. Raises ``ChatCallError``."""
        account = await self._call(
            "member",
            conversation_id,
            lambda: self.client.conversations.get_conversation_member(conversation_id, user_id),
            retry_later=False,
        )
        return _account(account)

    async def members(self, conversation_id: str) -> list[dict[str, Any]]:
        """Everyone in a conversation (a channel: its team's members). Raises ``ChatCallError``."""
        accounts = await self._call(
            "members",
            conversation_id,
            lambda: self.client.conversations.get_conversation_members(conversation_id),
            retry_later=False,
        )
        return [_account(a) for a in accounts]

    async def send_private(
        self, *, user_id: str, bot: dict[str, Any], tenant_id: str | None, activity: dict[str, Any]
    ) -> None:
        """Open (or reuse) the one-to-one chat with ``user_id`` and post there."""
        parameters = ConversationParameters(
            is_group=False,
            agent=ChannelAccount.model_validate(bot),
            members=[ChannelAccount(id=user_id)],
            tenant_id=tenant_id,
        )
        created = await self._call(
            "create_conversation",
            user_id,
            lambda: self.client.conversations.create_conversation(parameters),
            retry_later=False,
        )
        conversation_id = str(getattr(created, "id", "") or "")
        if not conversation_id:
            raise ChatCallError(method="create_conversation", error="no conversation id")
        body = Activity.model_validate(activity)
        await self._call(
            "send",
            conversation_id,
            lambda: self.client.conversations.send_to_conversation(conversation_id, body),
            retry_later=False,
        )

    async def close(self) -> None:
        await self.client.close()


def _account(account: Any) -> dict[str, Any]:
    """The SDK's ``ChannelAccount`` as the JSON Teams sent (its Teams fields are extras)."""
    dumped = account.model_dump(by_alias=True, exclude_none=True) if hasattr(account, "model_dump") else {}
    return dumped if isinstance(dumped, dict) else {}
