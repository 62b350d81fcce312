"""Rate budgets per platform: token buckets keyed by a place (a workspace, a conversation).

Each budget holds one or more windows (``count`` calls per ``seconds``); a call waits until every
window has room. After a platform answers "slow down", ``pause`` empties the place's buckets so
nobody there calls again before the platform's ``Retry-After``. ``RateBudget`` is one replica's
view; ``RedisRateBudget`` keeps the buckets in Redis, so every replica spends the same budget.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

from retrieval.errors import ConferError

logger = logging.getLogger(__name__)


class RetryLaterError(ConferError):
    """A platform asked to wait (HTTP 429 and the like) and the caller handles it itself: status
    writers send the latest state after the wait instead of repeating an old one."""

    def __init__(self, *, method: str, retry_after: float) -> None:
        self.method = method
        self.retry_after = retry_after
        super().__init__(f"{method}: retry after {retry_after} s")


@dataclass(frozen=True)
class Window:
    count: float
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds


class Budget(Protocol):
    async def acquire(self, key: str) -> None:
        """Wait until ``key`` may make one more call, and count it."""
        ...

    async def pause(self, key: str, seconds: float) -> None:
        """Spend ``key``'s buckets so that its next call waits at least ``seconds``."""
        ...


class RateBudget:
    """``clock`` and ``sleep`` are the event loop's unless given (tests pass a fake clock)."""

    def __init__(
        self,
        windows: tuple[Window, ...],
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not windows:
            raise ValueError("a rate budget needs at least one window")
        self._clock = clock
        self._sleep = sleep
        self._windows = windows
        self._tokens: dict[str, list[float]] = {}
        self._stamp: dict[str, float] = {}
        self._max_keys = max_keys
        self._lock = asyncio.Lock()

    def _refill(self, key: str, now: float) -> list[float]:
        tokens = self._tokens.get(key)
        elapsed = now - self._stamp.get(key, now)
        if tokens is None:
            tokens = [w.count for w in self._windows]
        else:
            tokens = [min(w.count, t + elapsed * w.rate) for w, t in zip(self._windows, tokens, strict=True)]
        self._stamp[key] = now
        return tokens

    async def acquire(self, key: str) -> None:
        """Wait until ``key`` may make one more call, and count it."""
        while True:
            async with self._lock:
                now = self._clock()
                if len(self._tokens) > self._max_keys:
                    self._forget_full(now)
                tokens = self._refill(key, now)
                if all(t >= 1 for t in tokens):
                    self._tokens[key] = [t - 1 for t in tokens]
                    return
                self._tokens[key] = tokens
                wait = max((1 - t) / w.rate for w, t in zip(self._windows, tokens, strict=True) if t < 1)
            await self._sleep(wait)

    async def pause(self, key: str, seconds: float) -> None:
        """Spend ``key``'s buckets so that its next call waits at least ``seconds``."""
        self._tokens[key] = [-seconds * w.rate for w in self._windows]
        self._stamp[key] = self._clock()

    def _forget_full(self, now: float) -> None:
        """Drop places whose buckets have refilled: they behave exactly like unseen ones."""
        for key in list(self._tokens):
            tokens = self._refill(key, now)  # moves the key's stamp: keep what it regained
            if all(t >= w.count for w, t in zip(self._windows, tokens, strict=True)):
                del self._tokens[key]
                del self._stamp[key]
            else:
                self._tokens[key] = tokens


# Microsoft Teams: per bot and conversation, 7 messages a second, 8 per 2 s, 60 per 30 s, 1,800 an hour.
TEAMS_CONVERSATION_WINDOWS = (
    Window(7, 1.0),
    Window(8, 2.0),
    Window(60, 30.0),
    Window(1800, 3600.0),
)


def build_teams_budget() -> RateBudget:
    return RateBudget(TEAMS_CONVERSATION_WINDOWS)


# Token buckets of one place in one Redis hash: field i holds window i's tokens, "at" the time they
# were counted (Redis's own clock, so replicas with skewed clocks agree). ARGV: "acquire" or
# "pause", the pause in seconds, then count and seconds of each window. Returns "0" when the call
# may go, else how many seconds to wait before asking again.
_BUCKET_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local pause = tonumber(ARGV[2])
local windows = (#ARGV - 2) / 2
local stamp = tonumber(redis.call('HGET', KEYS[1], 'at') or now)
local tokens, wait, longest = {}, 0, 0
for i = 1, windows do
  local count, seconds = tonumber(ARGV[1 + 2 * i]), tonumber(ARGV[2 + 2 * i])
  local rate = count / seconds
  if seconds > longest then longest = seconds end
  local held = tonumber(redis.call('HGET', KEYS[1], tostring(i)) or count)
  if ARGV[1] == 'pause' then
    held = -pause * rate
  else
    held = math.min(count, held + (now - stamp) * rate)
    if held < 1 then wait = math.max(wait, (1 - held) / rate) end
  end
  tokens[i] = held
end
for i = 1, windows do
  local held = tokens[i]
  if ARGV[1] == 'acquire' and wait == 0 then held = held - 1 end
  redis.call('HSET', KEYS[1], tostring(i), tostring(held))
end
redis.call('HSET', KEYS[1], 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(longest + pause) + 60)
return tostring(wait)
"""


class RedisRateBudget:
    """The same buckets as ``RateBudget``, kept in Redis and changed atomically by one script, so
    several replicas share one platform budget. When Redis fails, this replica falls back to its
    own in-process budget (logged once): slower to notice others' calls beats not calling."""

    def __init__(self, *, client: "Redis", name: str, windows: tuple[Window, ...]) -> None:
        self._client = client
        self._prefix = f"confer:budget:{name}:"
        self._args = [str(v) for w in windows for v in (w.count, w.seconds)]
        self._fallback = RateBudget(windows)
        self._script = client.register_script(_BUCKET_SCRIPT)
        self._warned = False

    async def _run(self, key: str, mode: str, seconds: float = 0.0) -> float | None:
        try:
            answer = await self._script(keys=[self._prefix + key], args=[mode, str(seconds), *self._args])
        except (RedisError, OSError):
            if not self._warned:
                self._warned = True
                logger.warning("redis unavailable for rate budgets; budgeting in process")
            return None
        return float(answer.decode() if isinstance(answer, bytes) else answer)

    async def acquire(self, key: str) -> None:
        while True:
            wait = await self._run(key, "acquire")
            if wait is None:
                await self._fallback.acquire(key)
                return
            if wait <= 0:
                return
            await asyncio.sleep(wait)

    async def pause(self, key: str, seconds: float) -> None:
        await self._fallback.pause(key, seconds)
        await self._run(key, "pause", seconds)

    async def close(self) -> None:
        await self._client.aclose()


def build_budget(*, name: str, windows: tuple[Window, ...], redis: "Redis | None") -> Budget:
    """A budget shared through ``redis`` when given, else this process's own."""
    if redis is not None:
        return RedisRateBudget(client=redis, name=name, windows=windows)
    return RateBudget(windows)
