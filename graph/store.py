"""LangGraph's store, for what outlives one question: the turns of a thread. In process (the
terminal), over a SQLite connection or over a PostgreSQL pool; the chat core's thread memory opens
the connection, reads and writes through the store, and words its failures. Only ``graph/``
imports LangGraph, so the store is made here."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, TTLConfig


def _ttl(ttl_days: float) -> "TTLConfig":
    return {"default_ttl": ttl_days * 24 * 60, "refresh_on_read": False}


def process_store() -> "BaseStore":
    """A store for one process only: gone when the process ends."""
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore()


async def sqlite_store(conn: Any, *, ttl_days: float) -> "BaseStore":
    """The store over an open ``aiosqlite`` connection, its tables created when missing; items
    expire ``ttl_days`` after they were written. Raises what SQLite raises."""
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    store = AsyncSqliteStore(conn, ttl=_ttl(ttl_days))
    await store.setup()
    return store


async def postgres_store(pool: Any, *, ttl_days: float) -> "BaseStore":
    """The store over an open ``psycopg_pool`` pool, as ``sqlite_store``. Raises what psycopg
    raises."""
    from langgraph.store.postgres.aio import AsyncPostgresStore

    store = AsyncPostgresStore(pool, ttl=_ttl(ttl_days))
    await store.setup()
    return store
