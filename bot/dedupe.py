"""Exactly-once handling of redeliveries on every platform: remember each event id (Slack's
``event_id``, a Teams activity id) for a while, in process or in Redis across replicas."""

import logging
import time
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


class EventDeduplicator(Protocol):
    async def first_delivery(self, event_id: str) -> bool:
        """True the first time an id is seen within the TTL; False for a redelivery."""
        ...

    async def close(self) -> None: ...


class MemoryDeduplicator:
    """In-process, for one replica."""

    def __init__(self, *, ttl: float) -> None:
        self._ttl = ttl
        self._seen: dict[str, float] = {}

    async def first_delivery(self, event_id: str) -> bool:
        now = time.monotonic()
        if len(self._seen) > 10_000:
            self._seen = {k: v for k, v in self._seen.items() if v > now}
        expiry = self._seen.get(event_id)
        if expiry is not None and expiry > now:
            return False
        self._seen[event_id] = now + self._ttl
        return True

    async def close(self) -> None:
        self._seen.clear()


class RedisDeduplicator:
    """Shared by every replica: ``SET key 1 NX EX ttl`` is atomic across them."""

    def __init__(self, *, client: "Redis", ttl: int, prefix: str = "confer:event:") -> None:
        self._client = client
        self._ttl = ttl
        self._prefix = prefix

    async def first_delivery(self, event_id: str) -> bool:
        try:
            created = await self._client.set(self._prefix + event_id, "1", nx=True, ex=self._ttl)
        except RedisError:
            # Fail open: answering twice is better than never answering.
            logger.warning("redis unavailable for deduplication; processing the event")
            return True
        return bool(created)

    async def close(self) -> None:
        await self._client.aclose()


def build_deduplicator(*, redis_url: str | None, ttl: int) -> EventDeduplicator:
    if redis_url:
        return RedisDeduplicator(client=Redis.from_url(redis_url), ttl=ttl)
    return MemoryDeduplicator(ttl=ttl)
