"""Thread memory on SQLite and on the local PostgreSQL (skipped, saying so, when none answers)."""

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.chat.memory import (
    MAX_TURNS,
    MemoryUnavailableError,
    ThreadKey,
    ThreadMemory,
    Turn,
    build_thread_memory,
)
from tests.fakes.tcp_proxy import TcpProxy

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"

OpenMemory = Callable[[], Awaitable[ThreadMemory]]


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(params=["sqlite", "postgresql"])
async def open_memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenMemory]:
    """Opens a new store object on the same database each call (a restart, or another replica)."""
    url = None
    if request.param == "postgresql":
        if not _postgres_answers():
            pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: PostgreSQL memory not tested")
        url = POSTGRES_URL
    opened: list[ThreadMemory] = []

    async def open_one() -> ThreadMemory:
        memory = await build_thread_memory(data_dir=tmp_path, database_url=url, ttl_days=30)
        opened.append(memory)
        return memory

    yield open_one
    for memory in opened:
        await memory.close()


def _key() -> ThreadKey:
    # A fresh thread per test: the PostgreSQL database is shared with other runs.
    return ThreadKey("slack", "T1", "C1", f"{uuid.uuid4().hex}.0001")


def _turn(n: int) -> Turn:
    return Turn(
        asked=f"question {n}",
        question=f"question {n}",
        subject="parental leave",
        collections=("handbook",),
        answer=f"answer {n}",
        passage_ids=(f"handbook:leave.md#{n}",),
    )


async def test_memory_keeps_turns_across_a_restart(open_memory: OpenMemory) -> None:
    key = _key()
    first = await open_memory()
    assert await first.turns(key) == []
    await first.remember(key, _turn(1))
    await first.remember(key, _turn(2))
    await first.close()

    restarted = await open_memory()
    turns = await restarted.turns(key)
    assert [t.asked for t in turns] == ["question 1", "question 2"]
    assert turns[1].passage_ids == ("handbook:leave.md#2",)
    assert turns[1].collections == ("handbook",)


async def test_memory_shared_by_two_stores_either_continues(open_memory: OpenMemory) -> None:
    key = _key()
    one, two = await open_memory(), await open_memory()
    await one.remember(key, _turn(1))
    await two.remember(key, _turn(2))
    assert [t.asked for t in await one.turns(key)] == ["question 1", "question 2"]


async def test_memory_threads_are_separate_by_every_part_of_the_key(open_memory: OpenMemory) -> None:
    memory = await open_memory()
    key = _key()
    await memory.remember(key, _turn(1))
    for other in (
        ThreadKey("teams", key.workspace, key.channel, key.thread),
        ThreadKey(key.platform, "T2", key.channel, key.thread),
        ThreadKey(key.platform, key.workspace, "C2", key.thread),
        ThreadKey(key.platform, key.workspace, key.channel, key.thread + "9"),
    ):
        assert await memory.turns(other) == []


async def test_memory_keeps_the_last_turns_and_bounds_answers(open_memory: OpenMemory) -> None:
    memory = await open_memory()
    key = _key()
    for n in range(MAX_TURNS + 3):
        await memory.remember(key, _turn(n))
    await memory.remember(key, Turn(asked="long", question="long", answer="x" * 10_000))
    turns = await memory.turns(key)
    assert len(turns) == MAX_TURNS
    assert turns[0].asked == "question 4"
    assert len(turns[-1].answer) <= 2000


async def test_memory_expired_threads_are_swept(tmp_path: Path) -> None:
    memory = await build_thread_memory(data_dir=tmp_path, database_url=None, ttl_days=1 / 86400)  # 1 s
    try:
        key = _key()
        await memory.remember(key, _turn(1))
        removed = 0
        async with asyncio.timeout(30):  # SQLite keeps expiry to the second: wait until it has passed
            while not removed:
                await asyncio.sleep(0.5)
                removed = await memory.sweep()
        assert removed == 1
        assert await memory.turns(key) == []
    finally:
        await memory.close()


async def test_memory_sqlite_file_is_private(tmp_path: Path) -> None:
    memory = await build_thread_memory(data_dir=tmp_path, database_url=None, ttl_days=30)
    await memory.close()
    assert (tmp_path / "memory.sqlite").stat().st_mode & 0o077 == 0


async def test_memory_unreachable_postgres_at_start_names_database_url() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://postgres:secret-password@127.0.0.1:{port}/test"
    with pytest.raises(MemoryUnavailableError) as caught:
        await build_thread_memory(
            data_dir=Path("/nonexistent"), database_url=url, ttl_days=30, connect_seconds=0.5
        )  # nothing listens: the pool would try for 10 s
    assert "DATABASE_URL" in str(caught.value)
    assert "secret-password" not in str(caught.value)


class _Forwarder:
    """A TCP forwarder to PostgreSQL that can be cut, as a network failure cuts a database."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 5432)
        self._writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        await self._server.wait_closed()


async def test_memory_postgres_lost_mid_run_raises_memory_unavailable() -> None:
    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: mid-run failure not tested")
    forwarder = _Forwarder()
    await forwarder.start()
    url = f"postgresql://postgres@127.0.0.1:{forwarder.port}/test"
    memory = await build_thread_memory(data_dir=Path("/nonexistent"), database_url=url, ttl_days=30)
    try:
        key = _key()
        await memory.remember(key, _turn(1))
        assert len(await memory.turns(key)) == 1
        await forwarder.cut()
        with pytest.raises(MemoryUnavailableError):
            await memory.turns(key)
        with pytest.raises(MemoryUnavailableError):
            await memory.remember(key, _turn(2))
    finally:
        await memory.close()


async def test_conversations_without_a_reachable_memory_go_on_and_count_it() -> None:
    from bot.chat.conversations import Conversations
    from bot.metrics import build_metrics

    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: lost memory not tested")
    forwarder = _Forwarder()
    await forwarder.start()
    url = f"postgresql://postgres@127.0.0.1:{forwarder.port}/test"
    memory = await build_thread_memory(data_dir=Path("/nonexistent"), database_url=url, ttl_days=30)
    metrics = build_metrics()
    conversations = Conversations(memory=memory, metrics=metrics)
    try:
        key = _key()
        await memory.remember(key, _turn(1))
        assert len(await conversations.history(key)) == 1
        await forwarder.cut()  # the database is gone from here on
        assert await conversations.history(key) == []
        assert metrics.memory_unavailable.labels("read")._value.get() == 1
    finally:
        await memory.close()


async def test_memory_postgres_back_after_an_outage_is_used_by_the_very_next_call() -> None:
    """Reconnection on demand: while PostgreSQL is down every call fails at once (it waits for no
    pool); the first call after it is back succeeds (no reconnection back-off: a pool that kept
    connections went on failing for seconds after a few seconds' outage)."""
    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: an outage is not tested")
    proxy = await TcpProxy(5432).start()
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}/test"
    memory = await build_thread_memory(data_dir=Path("/nonexistent"), database_url=url, ttl_days=30)
    try:
        key = _key()
        await memory.remember(key, _turn(1))
        await proxy.cut()
        for _ in range(4):  # a busy outage: replies keep coming in
            failed = await asyncio.gather(*(memory.turns(key) for _ in range(4)), return_exceptions=True)
            assert all(isinstance(f, MemoryUnavailableError) for f in failed)
        await proxy.start()
        assert len(await memory.turns(key)) == 1
        await memory.remember(key, _turn(2))
        assert len(await memory.turns(key)) == 2
    finally:
        await memory.close()
        await proxy.stop()
