"""What the chat core's own stores (thread memory, feedback) share: a bounded call that turns a
store that is down or slow into one error of the store's own, a periodic sweep of what expired, and
PostgreSQL connections made on demand."""

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable
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
