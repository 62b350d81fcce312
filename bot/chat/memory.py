"""Thread memory: the turns of a conversation, kept so a follow-up can be understood.

A thread is keyed by platform, workspace, channel and thread; its turns (the question as asked,
the standalone question that was searched, the collections it targeted, the answer's text and the
ids of the passages it cited) are kept in LangGraph's store: a SQLite file in ``CONFER_DATA_DIR``
by default (``langgraph-checkpoint-sqlite``), PostgreSQL with ``DATABASE_URL``
(``langgraph-checkpoint-postgres``) so any replica continues any thread. Nothing else is kept:
no user ids, no tokens. Each thread expires ``CONFER_THREAD_TTL_DAYS`` after its last turn; a
sweep deletes expired threads at start and then every hour.

A store that cannot be reached at start is an error naming the setting; one that fails mid-run
raises ``MemoryUnavailableError`` from each call, which callers turn into "answer without memory".
"""

import asyncio
import contextlib
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.chat.stores import (
    CONNECT_SECONDS,
    PostgresDatabase,
    StoreOpenError,
    Sweeper,
    bounded,
    open_postgres,
    open_sqlite,
)
from graph import postgres_store, process_store, sqlite_store
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

MEMORY_FILE = "memory.sqlite"
MAX_TURNS = 8  # the turns kept per thread: a follow-up reads the last few
MAX_ANSWER_CHARS = 2000
OPERATION_TIMEOUT = 3.0  # seconds: a slow store costs the memory, not the question
SWEEP_MINUTES = 60
POOL_SIZE = 6  # PostgreSQL connections at a time: 4 for thread memory, 2 for feedback, which shares them
_NAMESPACE = "confer-threads"


class MemoryUnavailableError(ConferError):
    """The thread memory's database cannot be reached (at start: names the setting)."""


@dataclass(frozen=True)
class ThreadKey:
    platform: str
    workspace: str
    channel: str
    thread: str

    @property
    def namespace(self) -> tuple[str, ...]:
        # LangGraph namespaces may not contain dots in their labels.
        return (
            _NAMESPACE,
            *(part.replace(".", "_") or "-" for part in (self.platform, self.workspace, self.channel)),
        )

    @property
    def item_key(self) -> str:
        return self.thread or "-"


class Turn(BaseModel):
    """One question and its answer, as a later follow-up needs them."""

    model_config = ConfigDict(frozen=True)

    asked: str  # the text as the person wrote it (``in:`` targets removed)
    question: str  # the standalone question that was searched
    subject: str = ""
    collections: tuple[str, ...] = ()  # what the turn targeted (named, or routed to)
    answer: str = ""
    passage_ids: tuple[str, ...] = ()


class ThreadMemory:
    """Reads and writes a thread's turns through a LangGraph ``BaseStore``."""

    def __init__(
        self,
        store: Any,
        *,
        ttl_days: float | None,
        backend: str,
        closer: contextlib.AsyncExitStack,
        postgres: PostgresDatabase | None = None,
    ) -> None:
        self._store = store
        # The PostgreSQL pool under the store, which the feedback store shares (``build_feedback_store``).
        self.postgres = postgres
        self._ttl_minutes = ttl_days * 24 * 60 if ttl_days is not None else None
        self.backend = backend
        self._closer = closer
        self._sweeper = Sweeper(
            "confer-memory-sweep",
            self.sweep,
            what="threads",
            unavailable=(MemoryUnavailableError,),
            minutes=SWEEP_MINUTES,
        )

    async def turns(self, key: ThreadKey) -> list[Turn]:
        """The thread's turns, oldest first (``[]`` for a thread never answered)."""
        item = await self._call(self._store.aget(key.namespace, key.item_key))
        if item is None:
            return []
        turns = []
        for raw in item.value.get("turns", []):
            try:
                turns.append(Turn.model_validate(raw))
            except ValidationError:
                continue  # a turn written by another version: skipped, never a failure
        return turns

    async def remember(self, key: ThreadKey, turn: Turn, *, replace_last: bool = False) -> None:
        """Append a turn (the oldest go beyond ``MAX_TURNS``), or replace the last one (its answer
        arrived); the thread's expiry restarts."""
        turn = turn.model_copy(update={"answer": turn.answer[:MAX_ANSWER_CHARS]})
        previous = await self.turns(key)
        if replace_last and previous:
            previous = previous[:-1]
        kept = [*previous, turn][-MAX_TURNS:]
        value = {"turns": [t.model_dump(mode="json") for t in kept]}
        if self._ttl_minutes is None:
            await self._call(self._store.aput(key.namespace, key.item_key, value))
        else:
            await self._call(self._store.aput(key.namespace, key.item_key, value, ttl=self._ttl_minutes))

    async def forget(self, key: ThreadKey) -> None:
        await self._call(self._store.adelete(key.namespace, key.item_key))

    async def sweep(self) -> int:
        """Delete expired threads now; returns how many."""
        if self._ttl_minutes is None:
            return 0
        return int(await self._call(self._store.sweep_ttl()))

    def start_sweeping(self) -> None:
        """Sweep expired threads every ``SWEEP_MINUTES`` on the running loop until ``close``."""
        self._sweeper.start()

    async def close(self) -> None:
        await self._sweeper.stop()
        # LangGraph's async store batches operations in a background task of its own; stop it before
        # the pool goes, so no operation is left waiting on a connection that will never come back.
        batcher = getattr(self._store, "_task", None)
        if isinstance(batcher, asyncio.Task) and not batcher.done():
            batcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                async with asyncio.timeout(OPERATION_TIMEOUT):
                    await batcher
        await self._closer.aclose()

    async def _call(self, operation: Any) -> Any:
        return await bounded(
            operation,
            seconds=OPERATION_TIMEOUT,
            unavailable=lambda error: MemoryUnavailableError(f"thread memory ({self.backend}): {error}"),
        )


def build_local_memory() -> ThreadMemory:
    """Memory for one process only (the terminal's conversation): gone when the process ends."""
    return ThreadMemory(process_store(), ttl_days=None, backend="process", closer=contextlib.AsyncExitStack())


async def build_thread_memory(
    *, data_dir: Path, database_url: str | None, ttl_days: float, connect_seconds: float = CONNECT_SECONDS
) -> ThreadMemory:
    """SQLite in ``data_dir``, or PostgreSQL at ``database_url``; tables are created when missing.

    Raises ``MemoryUnavailableError`` naming ``DATABASE_URL`` (or the data folder) when the store
    cannot be opened; the message never contains the URL (it may hold a password)."""
    closer = contextlib.AsyncExitStack()
    postgres = None
    try:
        if database_url:
            store, postgres = await _open_postgres(database_url, ttl_days, closer, connect_seconds)
            backend = "postgresql"
        else:
            store = await _open_sqlite(data_dir / MEMORY_FILE, ttl_days, closer)
            backend = "sqlite"
    except BaseException:
        await closer.aclose()
        raise
    return ThreadMemory(store, ttl_days=ttl_days, backend=backend, closer=closer, postgres=postgres)


async def _open_sqlite(path: Path, ttl_days: float, closer: contextlib.AsyncExitStack) -> Any:
    try:
        database = await open_sqlite(path)
    except StoreOpenError as exc:
        raise MemoryUnavailableError(
            f"CONFER_DATA_DIR: cannot open the thread memory at {path} ({exc.reason})"
        ) from None
    closer.push_async_callback(database.close)
    try:
        store = await sqlite_store(database.conn, ttl_days=ttl_days)
    except (OSError, sqlite3.Error) as exc:
        raise MemoryUnavailableError(
            f"CONFER_DATA_DIR: cannot open the thread memory at {path} ({type(exc).__name__})"
        ) from None
    return store


async def _open_postgres(
    url: str, ttl_days: float, closer: contextlib.AsyncExitStack, connect_seconds: float
) -> tuple[Any, PostgresDatabase]:
    from psycopg import Error as PsycopgError
    from psycopg_pool import PoolTimeout

    try:
        database = await open_postgres(
            url, max_size=POOL_SIZE, wait_seconds=OPERATION_TIMEOUT, connect_seconds=connect_seconds
        )
    except StoreOpenError:
        raise MemoryUnavailableError(
            "DATABASE_URL: PostgreSQL for thread memory does not answer (check the host, port, "
            "database and credentials, or unset DATABASE_URL to keep memory in CONFER_DATA_DIR)"
        ) from None
    closer.push_async_callback(database.close)
    try:
        store = await postgres_store(database.pool, ttl_days=ttl_days)
    except (PoolTimeout, PsycopgError, OSError) as exc:
        raise MemoryUnavailableError(
            f"DATABASE_URL: cannot create the thread memory tables ({type(exc).__name__})"
        ) from None
    return store, database
