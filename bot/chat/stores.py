"""What the chat core's own stores (thread memory, feedback) share: one SQLite/PostgreSQL layer
(``open_sqlite``, ``open_postgres``: how a file or a pool is opened, and one small interface over
both drivers), a bounded call that turns a store that is down or slow into one error of the
store's own, a periodic sweep of what expired, and PostgreSQL connections made on demand. Thread
memory hands the opened connection or pool to LangGraph's store; feedback writes its own two tables
through ``execute`` and ``fetch``. With SQLite each keeps its own file in ``CONFER_DATA_DIR``
(``memory.sqlite``, ``feedback.sqlite``, as before: nothing to migrate)."""

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


def is_database_error(exc: Exception) -> bool:
    """psycopg's and its pool's errors, without importing psycopg where PostgreSQL is not used."""
    return type(exc).__module__.startswith(("psycopg", "psycopg_pool"))


async def bounded(operation: Awaitable[T], *, seconds: float, unavailable: Callable[[str], Exception]) -> T:
    """``operation`` within ``seconds``; a timeout, a lost connection or a database error raises
    ``unavailable(<the error's type name>)`` (never its text, which may quote stored data); any
    other error is a bug and propagates."""
    try:
        async with asyncio.timeout(seconds):
            return await operation
    except (TimeoutError, OSError, sqlite3.Error) as exc:
        raise unavailable(type(exc).__name__) from None
    except Exception as exc:
        if is_database_error(exc):
            raise unavailable(type(exc).__name__) from None
        raise


class Sweeper:
    """Calls ``sweep`` now and then every ``minutes`` until ``stop``; a sweep that raises one of
    ``unavailable`` is logged and tried again next time, so a store that is down for a while never
    ends the sweeping."""

    def __init__(
        self,
        name: str,
        sweep: Callable[[], Awaitable[int]],
        *,
        what: str,
        unavailable: tuple[type[Exception], ...],
        minutes: float,
    ) -> None:
        self._name, self._sweep, self._what = name, sweep, what
        self._unavailable, self._minutes = unavailable, minutes
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                removed = await self._sweep()
                if removed:
                    logger.info("expired %s deleted", self._what, extra={"removed": removed})
            except self._unavailable:
                logger.warning("%s sweep failed; retrying later", self._what)
            await asyncio.sleep(self._minutes * 60)


# Seconds to reach PostgreSQL at start: psycopg's pool tries again (with a growing pause) until then.
CONNECT_SECONDS = 10.0


async def open_postgres_pool(
    url: str, *, max_size: int, wait_seconds: float, connect_seconds: float = CONNECT_SECONDS, **kwargs: Any
) -> Any:
    """PostgreSQL connections made when an operation needs one (at most ``max_size`` at a time),
    so a database that comes back is used by the very next operation. A pool that keeps
    connections reconnects in the background with a growing back-off (1, 2, 4, 8… s): after an
    outage it went on refusing operations for 13–24 s more, and a database that does not answer
    made each operation wait for the pool's time-out instead of failing at once. Each operation pays
    for one connection (a few milliseconds on a local network); Confer makes a handful per question.
    Raises ``psycopg_pool.PoolTimeout`` or a ``psycopg`` error when the database cannot be reached
    now (one connection is made to find out, tried for at most ``connect_seconds``); an operation
    waits at most ``wait_seconds`` for a connection when ``max_size`` are in use; ``kwargs`` go to
    each connection."""
    from psycopg_pool import AsyncNullConnectionPool

    pool: AsyncNullConnectionPool[Any] = AsyncNullConnectionPool(
        url, max_size=max_size, open=False, timeout=wait_seconds, kwargs=kwargs
    )
    try:
        await pool.open(wait=True, timeout=connect_seconds)
    except BaseException:
        await pool.close()
        raise
    return pool


class StoreOpenError(Exception):
    """A store's database could not be opened; ``reason`` is the error's type name (never its
    text). Each store turns it into its own error, naming the setting to check."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SqliteDatabase:
    """One SQLite file through one ``aiosqlite`` connection: ``?`` placeholders, rows as tuples.
    ``conn`` is the connection itself, for a library that takes one (LangGraph's store)."""

    backend = "sqlite"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self.conn.execute(sql, tuple(params))
        return int(cursor.rowcount)

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self.conn.execute(sql, tuple(params)) as cursor:
            return [tuple(row) for row in await cursor.fetchall()]

    async def close(self) -> None:
        await self.conn.close()


class PostgresDatabase:
    """PostgreSQL through a pool of connections made on demand (``open_postgres_pool``), with the
    same interface as ``SqliteDatabase``. ``pool`` is the pool itself (LangGraph's store takes it;
    its connections give rows as dicts, which LangGraph needs; ``fetch`` asks for tuples)."""

    backend = "postgresql"

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(sql.replace("?", "%s"), tuple(params))
            return int(cursor.rowcount)

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            await cursor.execute(sql.replace("?", "%s"), tuple(params))
            return [tuple(row) for row in await cursor.fetchall()]

    async def close(self) -> None:
        await self.pool.close()


Database = SqliteDatabase | PostgresDatabase


async def open_sqlite(path: Path) -> SqliteDatabase:
    """The SQLite file at ``path`` (created with its folder when missing), in WAL mode, waiting up
    to 3 s for another writer, readable by the service's user only. Raises ``StoreOpenError``."""
    import aiosqlite

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(str(path), isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StoreOpenError(type(exc).__name__) from None
    try:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA busy_timeout=3000")
    except sqlite3.Error as exc:
        await conn.close()
        raise StoreOpenError(type(exc).__name__) from None
    with contextlib.suppress(OSError):
        path.chmod(0o600)  # noqa: ASYNC240 -- one syscall at start; the stores keep people's questions
    return SqliteDatabase(conn)


async def open_postgres(
    url: str, *, max_size: int, wait_seconds: float, connect_seconds: float = CONNECT_SECONDS
) -> PostgresDatabase:
    """PostgreSQL at ``url`` (``open_postgres_pool``), autocommit, without prepared statements (a
    pooler in front may not keep them). Raises ``StoreOpenError``; never quotes the URL."""
    from psycopg import Error as PsycopgError
    from psycopg.rows import dict_row
    from psycopg_pool import PoolTimeout

    try:
        pool = await open_postgres_pool(
            url,
            max_size=max_size,
            wait_seconds=wait_seconds,
            connect_seconds=connect_seconds,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            connect_timeout=5,
        )
    except (PoolTimeout, PsycopgError, OSError) as exc:
        raise StoreOpenError(type(exc).__name__) from None
    return PostgresDatabase(pool)
