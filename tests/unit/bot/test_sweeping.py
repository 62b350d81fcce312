import asyncio

from bot.sweeping import Sweeper


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
