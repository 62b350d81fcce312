import asyncio
import sqlite3

import pytest

from bot.chat.stores import Sweeper, bounded


class DownError(Exception):
    pass


async def test_a_failed_sweep_is_tried_again_and_stop_ends_the_sweeping() -> None:
    calls: list[int] = []
    swept = asyncio.Event()

    async def sweep() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise DownError("store unreachable")
        swept.set()
        return 3

    sweeper = Sweeper("test-sweep", sweep, what="records", unavailable=(DownError,), minutes=0.0001)
    sweeper.start()
    sweeper.start()  # already running: still one task
    await asyncio.wait_for(swept.wait(), 5)
    await sweeper.stop()
    after_stop = len(calls)
    await asyncio.sleep(0.05)
    assert after_stop >= 2 and len(calls) == after_stop
    await sweeper.stop()  # stopping twice is harmless


class StoreDownError(Exception):
    pass


async def test_a_bounded_call_turns_a_down_or_slow_store_into_the_stores_own_error() -> None:
    async def fails(exc: Exception) -> None:
        raise exc

    def down(error: str) -> Exception:
        return StoreDownError(error)

    assert await bounded(asyncio.sleep(0, "kept"), seconds=1, unavailable=down) == "kept"
    with pytest.raises(StoreDownError, match=r"^TimeoutError$"):
        await bounded(asyncio.sleep(5), seconds=0.01, unavailable=down)
    with pytest.raises(StoreDownError, match=r"^OperationalError$"):  # the type, never the message
        await bounded(fails(sqlite3.OperationalError("secret row")), seconds=1, unavailable=down)
    with pytest.raises(ValueError):  # not the store's fault: a bug, raised as it is
        await bounded(fails(ValueError("bug")), seconds=1, unavailable=down)
