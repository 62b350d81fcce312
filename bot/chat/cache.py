"""The answer cache: the same question, asked again in a place with the same access, gets the stored
answer (its citations and trace, and a "cached, from <time>" note) in milliseconds.

The key (``cache_key``) covers everything the research graph's answer depends on: the question as
researched, normalised (case, spacing, punctuation; a follow-up is keyed by its standalone rewrite,
the only text the graph reads), the collections the place may search, those requested and the
place's defaults, who the answer is for (``Audience.key``: what they may read at the sources, so
an answer built for a wider reader is never served to a narrower one), the answer mode and the
model. Each entry also keeps the index generation of
every collection its answer searched (``SearchBackend.generations``): when ``confer index``
changes one of them, the entry no longer matches and the question is researched again, so a
changed collection invalidates exactly the answers that used it.

In process (``MemoryAnswerCache``, a TTL cache) or in Redis with ``REDIS_URL`` (shared by replicas,
entries expire by TTL). A Redis that stops answering costs the cache, never a question: the lookup
is a miss and the store is skipped (both logged, counted). ``CONFER_CACHE=off|memory|redis``.
"""

import asyncio
import hashlib
import json
import logging
import unicodedata
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from cachetools import TTLCache
from pydantic import BaseModel, ConfigDict

from graph import Answer, Question

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)

CacheMode = Literal["off", "memory", "redis"]
MEMORY_ENTRIES = 2000
REDIS_TIMEOUT = 0.5  # seconds: a slow Redis costs the cache, never the answer
KEY_PREFIX = "confer:answer:"
LINK_PREFIX = "confer:answer-of:"  # a posted answer's question id -> its cache key (for a 👎)


class CachedAnswer(BaseModel):
    """A stored answer, the index generations of the collections it searched, and when."""

    model_config = ConfigDict(frozen=True)

    answer: Answer
    generations: dict[str, str]
    created: float  # Unix time


def normalise(text: str) -> str:
    """The question as the key reads it: case-folded, punctuation and symbols taken out, spacing
    collapsed ("How long is parental leave?" and "how long is  parental leave" are one key)."""
    kept = "".join(
        " " if unicodedata.category(c)[0] in "PSZ" else c
        for c in unicodedata.normalize("NFKC", text).casefold()
    )
    return " ".join(kept.split())


def cache_key(question: Question, *, mode: str, model: str) -> str:
    """What the answer depends on besides the index, as one key."""
    parts = {
        "q": normalise(question.text),
        "allowed": sorted(question.allowed),
        "requested": sorted(question.requested),
        "defaults": sorted(question.defaults),
        "audience": question.audience.key,
        "mode": mode,
        "model": model,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


class AnswerCache(Protocol):
    """Where answers are kept; every method returns or does nothing when the store fails."""

    async def get(self, key: str) -> CachedAnswer | None: ...

    async def put(self, key: str, entry: CachedAnswer) -> None: ...

    async def evict(self, key: str) -> bool:
        """Whether an entry was there."""
        ...

    async def link(self, question_id: str, key: str) -> None:
        """Remember which entry a posted answer came from or went to (a 👎 on it evicts that)."""
        ...

    async def key_of(self, question_id: str) -> str | None: ...

    async def close(self) -> None: ...


class MemoryAnswerCache:
    """In process: one replica's answers, at most ``MEMORY_ENTRIES``, each for ``ttl`` seconds."""

    def __init__(self, *, ttl: float) -> None:
        self._entries: TTLCache[str, CachedAnswer] = TTLCache(MEMORY_ENTRIES, ttl)
        self._links: TTLCache[str, str] = TTLCache(MEMORY_ENTRIES, ttl)

    async def get(self, key: str) -> CachedAnswer | None:
        return self._entries.get(key)

    async def put(self, key: str, entry: CachedAnswer) -> None:
        self._entries[key] = entry

    async def evict(self, key: str) -> bool:
        return self._entries.pop(key, None) is not None

    async def link(self, question_id: str, key: str) -> None:
        self._links[question_id] = key

    async def key_of(self, question_id: str) -> str | None:
        return self._links.get(question_id)

    async def close(self) -> None:
        return None


class RedisAnswerCache:
    """In Redis, shared by every replica; entries expire after ``ttl`` seconds. A failing Redis is
    a miss (and a skipped store), logged once per failure, never an error for the question."""

    def __init__(self, *, client: "Redis", ttl: float) -> None:
        self._client = client
        self._ttl = max(1, int(ttl))

    async def get(self, key: str) -> CachedAnswer | None:
        raw = await self._call("get", self._client.get(KEY_PREFIX + key))
        if not raw:
            return None
        try:
            return CachedAnswer.model_validate_json(raw)
        except ValueError:  # written by another version: researched again, and replaced
            return None

    async def put(self, key: str, entry: CachedAnswer) -> None:
        await self._call("set", self._client.set(KEY_PREFIX + key, entry.model_dump_json(), ex=self._ttl))

    async def evict(self, key: str) -> bool:
        return bool(await self._call("delete", self._client.delete(KEY_PREFIX + key)))

    async def link(self, question_id: str, key: str) -> None:
        await self._call("set", self._client.set(LINK_PREFIX + question_id, key, ex=self._ttl))

    async def key_of(self, question_id: str) -> str | None:
        raw = await self._call("get", self._client.get(LINK_PREFIX + question_id))
        return raw.decode() if isinstance(raw, bytes) else raw if isinstance(raw, str) else None

    async def close(self) -> None:
        await self._client.aclose()

    async def _call(self, operation: str, pending: Awaitable[Any]) -> Any:
        from redis.exceptions import RedisError

        try:
            async with asyncio.timeout(REDIS_TIMEOUT):
                return await pending
        except (RedisError, OSError, TimeoutError) as error:
            logger.warning(
                "redis unavailable for the answer cache; answering uncached",
                extra={"operation": operation, "error": type(error).__name__},
            )
            return None


def build_answer_cache(*, mode: CacheMode, ttl: float, redis_url: str | None) -> AnswerCache | None:
    """``None`` when off; Redis when asked for (or ``memory`` is not asked for and ``REDIS_URL`` is
    set: the settings decide that), in process otherwise."""
    if mode == "off":
        return None
    if mode == "redis" and redis_url:
        from redis.asyncio import Redis

        return RedisAnswerCache(
            client=Redis.from_url(
                redis_url, socket_connect_timeout=REDIS_TIMEOUT, socket_timeout=REDIS_TIMEOUT
            ),
            ttl=ttl,
        )
    return MemoryAnswerCache(ttl=ttl)
