"""The model breaker shared by every replica through Redis (``REDIS_URL``): when one replica finds
the model stalled or rate limited, none sends it anything until it may be asked again, and then
one replica probes. Without Redis, or when Redis fails, the in-process breaker decides."""

import logging
import uuid

from redis.asyncio import Redis
from redis.exceptions import RedisError

from graph import LocalBreaker

logger = logging.getLogger(__name__)

OPEN_KEY = "confer:llm:breaker:open"
TRIPPED_KEY = "confer:llm:breaker:tripped"
PROBE_KEY = "confer:llm:breaker:probe"
TRIPPED_MEMORY = 3600.0  # seconds a trip is remembered while no probe has answered


class RedisBreaker:
    """``ModelBreaker`` over three keys: ``open`` (expires when the model may be asked again),
    ``tripped`` (a trip not yet followed by an answer) and ``probe`` (the one caller asking after
    the open time, ``SET NX``)."""

    def __init__(self, client: Redis, *, probe_seconds: float = 10.0, prefix: str = "") -> None:
        self._client = client
        self._probe = probe_seconds
        self._keys = tuple(prefix + k for k in (OPEN_KEY, TRIPPED_KEY, PROBE_KEY))
        self._local = LocalBreaker(probe_seconds=probe_seconds)
        self._warned = False

    async def allows(self) -> bool:
        open_key, tripped_key, probe_key = self._keys
        try:
            is_open, tripped = await self._client.mget(open_key, tripped_key)
            if is_open is not None:
                return False
            if tripped is None:
                return True
            won = await self._client.set(probe_key, uuid.uuid4().hex, nx=True, px=int(self._probe * 1000))
            return bool(won)
        except RedisError:
            self._redis_failed()
            return await self._local.allows()

    async def trip(self, *, seconds: float, reason: str) -> bool:
        open_key, tripped_key, probe_key = self._keys
        await self._local.trip(seconds=seconds, reason=reason)
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(open_key, reason, px=max(1, int(seconds * 1000)))
                pipe.set(tripped_key, reason, px=int((seconds + TRIPPED_MEMORY) * 1000), get=True)
                pipe.delete(probe_key)
                _, previous, _ = await pipe.execute()
            return previous is None
        except RedisError:
            self._redis_failed()
            return True

    async def reset(self) -> None:
        await self._local.reset()
        try:
            await self._client.delete(*self._keys[1:])
        except RedisError:
            self._redis_failed()

    async def close(self) -> None:
        await self._client.aclose()

    def _redis_failed(self) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("redis unavailable for the model breaker; deciding in process")


def build_breaker(redis_url: str | None) -> "RedisBreaker | LocalBreaker":
    return RedisBreaker(Redis.from_url(redis_url)) if redis_url else LocalBreaker()
