"""HTTP for connectors: at most ``rate`` requests a second to one host, and a 429 or 503 answered
with ``Retry-After`` waited out and asked again (RFC 9110 §10.2.3), a few times at most."""

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from retrieval.errors import SourceError, SourceProblem

logger = logging.getLogger(__name__)

USER_AGENT = "ConferBot/1.0 (document indexer)"
RETRIED_STATUSES = frozenset({429, 503})
MAX_RETRY_AFTER = 300.0  # seconds: a longer wait fails the sync, to be resumed by the next one


@dataclass(frozen=True)
class Response:
    status: int
    url: str  # after redirects
    headers: Mapping[str, str]
    body: bytes

    @property
    def media_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()


class RateLimitedError(Exception):
    """The host kept answering 429/503, or asked for a longer wait than ``MAX_RETRY_AFTER``."""


class PoliteClient:
    """An ``aiohttp`` session that spaces requests per host and honours ``Retry-After``.

    ``clock`` and ``sleep`` are injected so that tests measure the waits instead of spending them.
    """

    def __init__(
        self,
        *,
        rate: float,
        timeout: float = 30.0,
        retries: int = 4,
        max_bytes: int = 50_000_000,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.interval = 1.0 / rate
        self.retries = retries
        self.max_bytes = max_bytes
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}
        self._intervals: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._session: aiohttp.ClientSession | None = None

    def slow_down(self, host: str, interval: float) -> None:
        """Space requests to ``host`` at least ``interval`` seconds apart (a robots.txt Crawl-delay)."""
        self._intervals[host] = interval

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None) -> Response:
        """GET ``url``; raises ``aiohttp.ClientError`` or ``TimeoutError`` when it cannot be reached
        and ``RateLimitedError`` when the host will not answer in time."""
        for attempt in range(self.retries + 1):
            response = await self._request(url, headers or {})
            if response.status not in RETRIED_STATUSES:
                return response
            wait = retry_after(response.headers.get("Retry-After"), now=time.time())
            if wait is None and response.status == 503:
                return response  # down, not busy: nothing says when to come back
            wait = self.interval * 2**attempt if wait is None else wait
            if wait > MAX_RETRY_AFTER or attempt == self.retries:
                raise RateLimitedError(f"HTTP {response.status}, Retry-After {wait:.0f} s")
            logger.info("rate limited by %s, waiting %.1f s", urlsplit(url).hostname, wait)
            host = urlsplit(url).netloc
            self._next[host] = max(self._next.get(host, 0.0), self._clock() + wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _request(self, url: str, headers: Mapping[str, str]) -> Response:
        host = urlsplit(url).netloc
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            wait = self._next.get(host, 0.0) - self._clock()
            if wait > 0:
                await self._sleep(wait)
            interval = max(self.interval, self._intervals.get(host, 0.0))
            self._next[host] = self._clock() + interval
        session = self._session or aiohttp.ClientSession(
            timeout=self._timeout, headers={"User-Agent": USER_AGENT}
        )
        self._session = session
        async with session.get(url, headers=dict(headers), allow_redirects=True) as answer:
            body = await _read_body(answer.content, self.max_bytes)
            return Response(
                status=answer.status,
                url=str(answer.url),
                headers={k: v for k, v in answer.headers.items()},
                body=body,
            )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _read_body(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """The whole body, or its first ``limit`` bytes. ``StreamReader.read(n)`` is not that: it
    returns what has arrived so far (at most ``n``), which for a body sent in pieces is its first
    piece, and a file cut short is unreadable."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


async def get_or_fail(
    client: PoliteClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    fail: Callable[[SourceProblem, str], SourceError],
) -> Response:
    """``client.get`` whose failures to get any answer are a connector's ``SourceError``s."""
    try:
        return await client.get(url, headers=headers)
    except RateLimitedError as exc:
        raise fail("rate_limited", str(exc)) from None
    except (aiohttp.ClientError, TimeoutError) as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
        raise fail("unreachable", reason) from None


def json_object(response: Response, *, fail: Callable[[SourceProblem, str], SourceError]) -> dict[str, Any]:
    """The JSON object of a 200 answer. Another status is a ``SourceError``: a 5xx stops the sync
    half-way (the next one resumes), anything else refuses it; so is a body that is no JSON object."""
    if response.status != 200:
        raise fail("interrupted" if response.status >= 500 else "refused", f"HTTP {response.status}")
    try:
        body = json.loads(response.body)
    except ValueError:
        raise fail("refused", "an answer that is not JSON") from None
    if not isinstance(body, dict):
        raise fail("refused", "an answer that is not a JSON object")
    return body
