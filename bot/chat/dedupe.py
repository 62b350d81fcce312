"""Exactly-once handling of redeliveries on every platform: remember each delivery id (Slack's
``event_id``, a Teams activity id) for a while, in process or in Redis across replicas."""

import logging
import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from cachetools import TTLCache
from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot.metrics import ConferMetrics
from bot.settings import SettingsError

logger = logging.getLogger(__name__)

MAX_ENTRIES = 100_000


class EventDeduplicator(Protocol):
    async def first_delivery(self, event_id: str) -> bool:
        """True the first time an id is seen within the TTL; False for a redelivery."""
        ...

    async def check(self) -> None:
        """Raise ``SettingsError`` when the store cannot be used (called once at start-up)."""
        ...

    async def close(self) -> None: ...


class _Seen(TTLCache[str, bool]):
    """Delivery ids for ``ttl`` seconds, at most ``maxsize``; the oldest forgotten early is counted."""

    def __init__(
        self, maxsize: int, ttl: float, timer: Callable[[], float], evicted: Callable[[], None]
    ) -> None:
        super().__init__(maxsize, ttl, timer=timer)
        self._evicted = evicted

    def popitem(self) -> tuple[str, bool]:
        item = super().popitem()
        self._evicted()
        return item


class MemoryDeduplicator:
    """In-process, for one replica: ids kept ``ttl`` seconds in a ``cachetools.TTLCache``; when
    ``max_entries`` are held the oldest is forgotten early (counted). Bounded memory."""

    def __init__(
        self,
        *,
        ttl: float,
        max_entries: int = MAX_ENTRIES,
        metrics: ConferMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metrics = metrics
        self._seen = _Seen(max_entries, ttl, clock, self._evicted)

    def _evicted(self) -> None:
        if self._metrics is not None:
            self._metrics.dedupe_evictions.inc()

    def __len__(self) -> int:
        self._seen.expire()
        return len(self._seen)

    async def first_delivery(self, event_id: str) -> bool:
        if event_id in self._seen:
            return False
        self._seen[event_id] = True
        if self._metrics is not None:
            self._metrics.dedupe_entries.set(len(self._seen))
        return True

    async def check(self) -> None:
        return None

    async def close(self) -> None:
        self._seen.clear()


class RedisDeduplicator:
    """Shared by every replica: ``SET key 1 NX EX ttl`` is atomic across them. Every id is also
    recorded in process, and both are asked: when Redis goes away, this replica still drops the
    redeliveries of the events it saw before (Slack retries one it was slow to ack), not only
    those it saw during the outage."""

    def __init__(self, *, client: "Redis", ttl: int, prefix: str = "confer:event:", where: str = "") -> None:
        self._client = client
        self._ttl = ttl
        self._prefix = prefix
        self._where = where
        self._local = MemoryDeduplicator(ttl=ttl)

    async def first_delivery(self, event_id: str) -> bool:
        if not await self._local.first_delivery(event_id):
            return False  # this replica saw it (with Redis up or down)
        try:
            created = await self._client.set(self._prefix + event_id, "1", nx=True, ex=self._ttl)
        except (RedisError, OSError):
            # Redis went away after start: this replica still drops its own redeliveries (in
            # process), and answering twice across replicas is better than never answering.
            logger.warning("redis unavailable for deduplication; deduplicating in process")
            return True
        return bool(created)

    async def check(self) -> None:
        """Redis must answer at start-up: without it several replicas would each answer a
        redelivered event, silently."""
        try:
            await self._client.ping()
        except (RedisError, OSError) as error:
            raise SettingsError(
                [f"REDIS_URL: could not reach Redis at {self._where} ({type(error).__name__})"]
            ) from None

    async def close(self) -> None:
        await self._client.aclose()


def build_deduplicator(
    *, redis_url: str | None, ttl: int, metrics: ConferMetrics | None = None
) -> EventDeduplicator:
    if redis_url:
        parts = urlsplit(redis_url)  # host and port only: the URL may carry a password
        where = f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
        return RedisDeduplicator(client=Redis.from_url(redis_url), ttl=ttl, where=where)
    return MemoryDeduplicator(ttl=ttl, metrics=metrics)
