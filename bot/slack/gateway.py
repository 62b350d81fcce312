"""Every Slack Web API call goes through here: metrics per method and outcome, 429 answers waited
out (``Retry-After``), 5xx and temporary ``ok: false`` errors retried with a growing pause, and
per-workspace budgets for the calls a status makes many of (``chat.update``, ``chat.appendStream``),
shared by every replica through Redis when ``REDIS_URL`` is set.

The resending is slack_sdk's own: the gateway installs retry handlers on the Web API client
(``slack_sdk.http_retry``: the SDK's rate-limit, server-error and connection-error handlers, each
narrowed to Confer's rules), and the SDK's request loop asks them after every attempt. They count
each retried attempt in the metrics and pass the next one through the event loop's turn gate. What
a client-wide handler cannot know comes from the call through a context variable: how many
attempts it may make (``attempts=1`` for ``auth.test`` at start-up), and whether it may wait out a
429 at all (``retry_rate_limited=False``: a status edit sends the latest state later instead).
Calls that do not go through the gateway (Bolt's own) are never resent. The shared Redis budgets
stay Confer's (``bot.chat.ratelimit``): the SDK has no budget shared between processes.

No resend waits past the question's delivery deadline (``bot.chat.deadline``): a call still
failing then fails for good, and its caller falls back.

A lost connection or a time-out is a temporary ``SlackCallError`` too. It is retried only where
sending twice changes nothing (reads, ``chat.update`` with the whole state, a connection that was
never made); a post or a stream call may have been applied before its answer was lost, so it is
never sent again blindly: the error says so (``uncertain``) and the caller looks before posting
again (the SDK's default connection handler would resend any call whose connection broke)."""

import asyncio
import logging
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.interval_calculator import RetryIntervalCalculator
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.chat import deadline
from bot.chat.ratelimit import Budget, RateBudget, Window
from bot.chat.turns import TurnGate
from bot.errors import ChatCallError
from bot.metrics import ConferMetrics
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

MAX_RETRY_AFTER = 60.0
ATTEMPTS = 4  # tries of one Web API call in all, unless the call says otherwise
CALLS_PER_TURN = 16  # Web API calls started in one turn of the event loop (bot.chat.turns)
# Temporary failures Slack reports with HTTP 200 and ``ok: false``: retried like a 5xx.
TRANSIENT_ERRORS = frozenset({"internal_error", "service_unavailable", "request_timeout", "fatal_error"})


# Calls that change nothing when Slack gets them twice: a lost connection or a time-out is retried.
IDEMPOTENT_METHODS = frozenset(
    {
        "auth.test",
        "conversations.replies",
        "conversations.history",
        "conversations.info",
        "chat.update",  # always the whole latest state, from the message's one writer
        "assistant.threads.setStatus",
    }
)
CONNECTION_LOST = "connection_lost"
TIMED_OUT = "timeout"


class SlackCallError(ChatCallError):
    """A Web API call failed for good (``ok: false``, or still failing after retries).
    ``uncertain``: the connection broke or timed out after the call was sent, so Slack may have
    applied it; whoever resends it must first look whether it took effect."""

    def __init__(self, *, method: str, error: str, uncertain: bool = False) -> None:
        super().__init__(method=method, error=error)
        self.uncertain = uncertain


class RateLimitedError(ConferError):
    """A 429 that the caller chose to handle itself (status edits send the latest state instead)."""

    def __init__(self, *, method: str, retry_after: float) -> None:
        self.method = method
        self.retry_after = retry_after
        super().__init__(f"{method}: retry after {retry_after} s")


# ``chat.update`` is Tier 3: about 50 a minute per workspace and app (bursts of 10 kept).
UPDATE_WINDOWS = (Window(10, 12.0),)
# ``chat.appendStream`` is Tier 4: 100 and more a minute per workspace and app, with bursts.
APPEND_WINDOWS = (Window(100, 60.0),)


@dataclass(frozen=True)
class _CallPolicy:
    """What the handlers need to know of the call in progress (set by ``SlackGateway.call``)."""

    method: str
    attempts: int
    retry_rate_limited: bool


_POLICY: ContextVar[_CallPolicy | None] = ContextVar("slack_call_policy", default=None)


class _GrowingPause(RetryIntervalCalculator):
    """0.5 s, 1 s, 1.5 s, … after the first, second, third attempt."""

    def calculate_sleep_duration(self, current_attempt: int) -> float:
        return 0.5 * (current_attempt + 1)


class _Retrying:
    """What Confer's three handlers share: the call's own attempt limit (the SDK's state counts the
    attempts across handlers), the metric of the attempt given up on, and the turn gate."""

    def __init__(self, gateway: "SlackGateway") -> None:
        self.gateway = gateway

    @staticmethod
    def policy(state: RetryState) -> _CallPolicy | None:
        policy = _POLICY.get()
        if policy is None or state.current_attempt + 1 >= policy.attempts:
            return None
        return policy

    async def next_attempt(self, state: RetryState, outcome: str, pause: float) -> None:
        policy = _POLICY.get()
        method = policy.method if policy is not None else "unknown"
        self.gateway.metrics.slack_api_calls.labels(method, outcome).inc()
        if outcome == "rate_limited":
            self.gateway.metrics.slack_rate_limited.labels(method).inc()
        state.next_attempt_requested = True
        await asyncio.sleep(pause)
        state.increment_current_attempt()
        await self.gateway._turns.enter()


class _RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """A 429 waited out for its ``Retry-After`` (at most ``MAX_RETRY_AFTER``; the SDK's own reads
    whole seconds only and has no cap), unless the call handles rate limits itself."""

    def __init__(self, shared: _Retrying) -> None:
        super().__init__(max_retry_count=0)
        self.shared = shared

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        policy = self.shared.policy(state)
        if policy is None or not policy.retry_rate_limited:
            return False
        if response is not None and not deadline.allows(_retry_after(response.headers)):
            return False  # the question's delivery deadline comes first: the caller falls back
        return await self._can_retry_async(state=state, request=request, response=response, error=error)

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        headers = response.headers if response is not None else {}
        await self.shared.next_attempt(state, "rate_limited", _retry_after(headers))


class _PausedRetry(AsyncRetryHandler):
    """The next attempt after a growing pause, counted under ``outcome`` (server errors and lost
    connections; a 429 waits its own ``Retry-After``)."""

    outcome: str
    shared: _Retrying

    def in_time(self, state: RetryState) -> bool:
        """Whether the pause before the next attempt ends before the question's delivery deadline."""
        return deadline.allows(self.interval_calculator.calculate_sleep_duration(state.current_attempt))

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        pause = self.interval_calculator.calculate_sleep_duration(state.current_attempt)
        await self.shared.next_attempt(state, self.outcome, pause)


class _ServerErrorRetry(_PausedRetry, AsyncServerErrorRetryHandler):
    """Any 5xx (the SDK's own retries 500 and 503 only), and Slack's temporary ``ok: false``."""

    def __init__(self, shared: _Retrying) -> None:
        super().__init__(max_retry_count=0, interval_calculator=_GrowingPause())
        self.shared = shared

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or self.shared.policy(state) is None or not self.in_time(state):
            return False
        body = response.body if isinstance(response.body, dict) else {}
        return response.status_code >= 500 or (
            response.status_code == 200 and not body.get("ok", True) and body.get("error") in TRANSIENT_ERRORS
        )

    outcome = "server_error"


class _ConnectionRetry(_PausedRetry, AsyncConnectionErrorRetryHandler):
    """A lost connection or a time-out: sent again only when Slack never got the call, or when
    getting it twice changes nothing (``IDEMPOTENT_METHODS``)."""

    def __init__(self, shared: _Retrying) -> None:
        super().__init__(
            max_retry_count=0,
            interval_calculator=_GrowingPause(),
            error_types=[aiohttp.ClientError, TimeoutError],
        )
        self.shared = shared

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        policy = self.shared.policy(state)
        if (
            policy is None
            or not self.in_time(state)
            or not await self._can_retry_async(state=state, request=request, response=response, error=error)
        ):
            return False
        return isinstance(error, aiohttp.ClientConnectorError) or policy.method in IDEMPOTENT_METHODS

    outcome = "connection_error"


def _retry_after(headers: Mapping[str, list[str] | str]) -> float:
    """A 429's ``Retry-After`` in seconds (1 when missing or 0), at most ``MAX_RETRY_AFTER``."""
    for name, values in headers.items():
        if name.lower() == "retry-after" and values:
            try:
                return min(float(values if isinstance(values, str) else values[0]) or 1.0, MAX_RETRY_AFTER)
            except ValueError:
                break
    return 1.0


def retry_handlers(gateway: "SlackGateway") -> list[AsyncRetryHandler]:
    """The handlers ``SlackGateway`` installs on its Web API client."""
    shared = _Retrying(gateway)
    return [_RateLimitRetry(shared), _ServerErrorRetry(shared), _ConnectionRetry(shared)]


class SlackGateway:
    def __init__(
        self,
        *,
        client: AsyncWebClient,
        metrics: ConferMetrics,
        update_budget: Budget | None = None,
        append_budget: Budget | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.bot_id = ""  # Confer's bot id (``auth.test`` at start-up): its own messages carry it
        self.update_budget = update_budget or RateBudget(UPDATE_WINDOWS)
        self.append_budget = append_budget or RateBudget(APPEND_WINDOWS)
        # A burst's status messages all start at once: their calls are built and sent at most
        # CALLS_PER_TURN per turn of the event loop, not in one block (``bot.chat.turns``).
        self._turns = TurnGate(CALLS_PER_TURN)
        # The SDK resends by these; they act only inside ``call`` (see the module's docstring).
        client.retry_handlers = retry_handlers(self)

    async def call(
        self, method: str, *, retry_rate_limited: bool = True, attempts: int | None = None, **params: Any
    ) -> dict[str, Any]:
        """One Web API call, resent by the client's handlers up to ``attempts`` (``ATTEMPTS``) times
        in all; the last attempt's failure is counted and raised here."""
        await self._turns.enter()
        token = _POLICY.set(
            _CallPolicy(method, ATTEMPTS if attempts is None else attempts, retry_rate_limited)
        )
        try:
            response = await self.client.api_call(method, json=params)
        except (aiohttp.ClientError, TimeoutError) as exc:
            unsent = isinstance(exc, aiohttp.ClientConnectorError)  # Slack never got it
            error = TIMED_OUT if isinstance(exc, TimeoutError) else CONNECTION_LOST
            self.metrics.slack_api_calls.labels(method, "connection_error").inc()
            logger.warning("slack call failed", extra={"method": method, "error": type(exc).__name__})
            raise SlackCallError(method=method, error=error, uncertain=not unsent) from None
        except SlackApiError as exc:
            status = exc.response.status_code
            if status == 429:
                retry_after = _retry_after(exc.response.headers)
                self.metrics.slack_rate_limited.labels(method).inc()
                self.metrics.slack_api_calls.labels(method, "rate_limited").inc()
                if not retry_rate_limited:
                    raise RateLimitedError(method=method, retry_after=retry_after) from None
                raise SlackCallError(method=method, error="ratelimited") from None
            if status >= 500:
                self.metrics.slack_api_calls.labels(method, "server_error").inc()
                raise SlackCallError(method=method, error=f"http_{status}") from None
            error = (
                str(exc.response.get("error", "unknown_error"))
                if isinstance(exc.response.data, dict)
                else "unknown_error"
            )
            if error in TRANSIENT_ERRORS:  # still failing at the last attempt: counted as both
                self.metrics.slack_api_calls.labels(method, "server_error").inc()
            self.metrics.slack_api_calls.labels(method, "error").inc()
            logger.warning("slack call failed", extra={"method": method, "error": error})
            raise SlackCallError(method=method, error=error) from None
        finally:
            _POLICY.reset(token)
        self.metrics.slack_api_calls.labels(method, "ok").inc()
        data = response.data
        return data if isinstance(data, dict) else {}


_SLACK_HOSTS = ("slack.com", "slack-gov.com")


class ResponseUrlError(ConferError):
    """A ``response_url`` that is not Slack's, or that Slack refused."""


async def respond(client: AsyncWebClient, response_url: str, **payload: Any) -> None:
    """Send to a slash command's ``response_url`` (works in DMs and channels Confer is not in).
    Only Slack's own hosts, or the configured Web API's host (a test or proxy), are called."""
    url = urlsplit(response_url)
    api = urlsplit(client.base_url)
    slack_host = url.scheme == "https" and (url.hostname or "").endswith(tuple("." + h for h in _SLACK_HOSTS))
    if not (slack_host or (url.scheme, url.netloc) == (api.scheme, api.netloc)):
        raise ResponseUrlError("response_url is not Slack's")
    # No resend by the client: a post whose connection broke may have been shown already.
    webhook = AsyncWebhookClient(
        response_url, timeout=client.timeout, session=client.session, retry_handlers=[]
    )
    try:
        response = await webhook.send_dict(payload)
    except (aiohttp.ClientError, TimeoutError) as error:
        raise ResponseUrlError(type(error).__name__) from None
    if response.status_code != 200:
        raise ResponseUrlError(f"http_{response.status_code}")


def share_session(client: AsyncWebClient) -> aiohttp.ClientSession:
    """Give ``client`` one pooled HTTP session (kept-alive connections; against Slack, one TLS
    handshake per connection rather than per call) and return it; the caller closes it on shutdown.
    Without one the SDK opens and closes a session, and a connection, for every call. Call inside
    the running event loop. Proxy variables are ignored, as the SDK's own sessions do by default."""
    session = aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=client.timeout),
        connector=aiohttp.TCPConnector(limit=64, ssl=client.ssl if client.ssl is not None else True),
        trust_env=client.trust_env_in_session,
    )
    client.session = session
    return session
