"""Every Slack Web API call goes through here: metrics per method and outcome, 429 answers waited
out (``Retry-After``), 5xx and temporary ``ok: false`` errors retried with a growing pause, and
per-workspace budgets for the calls a status makes many of (``chat.update``, ``chat.appendStream``),
shared by every replica through Redis when ``REDIS_URL`` is set.

A lost connection or a time-out is a temporary ``SlackCallError`` too. It is retried only where
sending twice changes nothing (reads, ``chat.update`` with the whole state, a connection that was
never made); a post or a stream call may have been applied before its answer was lost, so it is
never sent again blindly: the error says so (``uncertain``) and the caller looks before posting
again. The Web API client must not resend by itself either (``retry_handlers=[]``: slack_sdk's
default handler resends any call whose connection broke)."""

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.chat.ratelimit import Budget, RateBudget, Window
from bot.chat.turns import TurnGate
from bot.errors import ChatCallError
from bot.metrics import ConferMetrics
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

MAX_RETRY_AFTER = 60.0
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
        self.update_budget = update_budget or RateBudget(UPDATE_WINDOWS)
        self.append_budget = append_budget or RateBudget(APPEND_WINDOWS)
        # A burst's status messages all start at once: their calls are built and sent at most
        # CALLS_PER_TURN per turn of the event loop, not in one block (``bot.chat.turns``).
        self._turns = TurnGate(CALLS_PER_TURN)

    async def call(
        self, method: str, *, retry_rate_limited: bool = True, attempts: int = 4, **params: Any
    ) -> dict[str, Any]:
        for attempt in range(1, attempts + 1):
            await self._turns.enter()
            try:
                response = await self.client.api_call(method, json=params)
            except (aiohttp.ClientError, TimeoutError) as exc:
                unsent = isinstance(exc, aiohttp.ClientConnectorError)  # Slack never got it
                error = TIMED_OUT if isinstance(exc, TimeoutError) else CONNECTION_LOST
                self.metrics.slack_api_calls.labels(method, "connection_error").inc()
                if (unsent or method in IDEMPOTENT_METHODS) and attempt < attempts:
                    await asyncio.sleep(0.5 * attempt)
                    continue
                logger.warning("slack call failed", extra={"method": method, "error": type(exc).__name__})
                raise SlackCallError(method=method, error=error, uncertain=not unsent) from None
            except SlackApiError as exc:
                status = exc.response.status_code
                if status == 429:
                    retry_after = min(float(exc.response.headers.get("Retry-After", 1) or 1), MAX_RETRY_AFTER)
                    self.metrics.slack_rate_limited.labels(method).inc()
                    self.metrics.slack_api_calls.labels(method, "rate_limited").inc()
                    if not retry_rate_limited:
                        raise RateLimitedError(method=method, retry_after=retry_after) from None
                    if attempt < attempts:
                        await asyncio.sleep(retry_after)
                        continue
                    raise SlackCallError(method=method, error="ratelimited") from None
                if status >= 500:
                    self.metrics.slack_api_calls.labels(method, "server_error").inc()
                    if attempt < attempts:
                        await asyncio.sleep(0.5 * attempt)
                        continue
                    raise SlackCallError(method=method, error=f"http_{status}") from None
                error = (
                    str(exc.response.get("error", "unknown_error"))
                    if isinstance(exc.response.data, dict)
                    else "unknown_error"
                )
                if error in TRANSIENT_ERRORS:
                    self.metrics.slack_api_calls.labels(method, "server_error").inc()
                    if attempt < attempts:
                        await asyncio.sleep(0.5 * attempt)
                        continue
                self.metrics.slack_api_calls.labels(method, "error").inc()
                logger.warning("slack call failed", extra={"method": method, "error": error})
                raise SlackCallError(method=method, error=error) from None
            self.metrics.slack_api_calls.labels(method, "ok").inc()
            data = response.data
            return data if isinstance(data, dict) else {}
        raise SlackCallError(method=method, error="retries exhausted")


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
