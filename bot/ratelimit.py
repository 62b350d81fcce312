"""Rate budgets per platform: token buckets keyed by a place (a workspace, a conversation).

Each budget holds one or more windows (``count`` calls per ``seconds``); a call waits until every
window has room. After a platform answers "slow down", ``pause`` empties the place's buckets so
nobody there calls again before the platform's ``Retry-After``. In-process: one replica's view.
"""

import asyncio
import time
from dataclasses import dataclass

from retrieval.errors import ConferError


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


class RateBudget:
    def __init__(self, windows: tuple[Window, ...], *, max_keys: int = 10_000) -> None:
        if not windows:
            raise ValueError("a rate budget needs at least one window")
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
                now = time.monotonic()
                if len(self._tokens) > self._max_keys:
                    self._forget_full(now)
                tokens = self._refill(key, now)
                if all(t >= 1 for t in tokens):
                    self._tokens[key] = [t - 1 for t in tokens]
                    return
                self._tokens[key] = tokens
                wait = max((1 - t) / w.rate for w, t in zip(self._windows, tokens, strict=True) if t < 1)
            await asyncio.sleep(wait)

    def pause(self, key: str, seconds: float) -> None:
        """Spend ``key``'s buckets so that its next call waits at least ``seconds``."""
        self._tokens[key] = [-seconds * w.rate for w in self._windows]
        self._stamp[key] = time.monotonic()

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
