import asyncio

import pytest

from bot.chat.ratelimit import RateBudget, Window
from bot.chat.scheduler import QuestionScheduler, ShuttingDownError


async def test_at_most_n_run_and_the_rest_wait_in_order() -> None:
    scheduler = QuestionScheduler(max_concurrent=2)
    running = 0
    peak = 0
    order: list[int] = []
    positions: list[int] = []
    release = asyncio.Event()

    async def job(n: int) -> None:
        nonlocal running, peak

        async def queued(position: int) -> None:
            positions.append(position)

        async with scheduler.slot(on_queued=queued):
            running += 1
            peak = max(peak, running)
            order.append(n)
            await release.wait()
            running -= 1

    tasks = [scheduler.submit(job(n)) for n in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == [0, 1] and positions == [1, 2, 3]
    release.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4] and peak == 2


async def test_drain_stops_new_work_and_cancels_what_outlives_the_grace() -> None:
    scheduler = QuestionScheduler(max_concurrent=4)
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def quick() -> None:
        await asyncio.sleep(0)

    scheduler.submit(slow())
    scheduler.submit(quick())
    assert await scheduler.drain(grace=0.05) == 1
    assert cancelled.is_set()
    with pytest.raises(ShuttingDownError):
        scheduler.submit(quick())


async def test_rate_budget_allows_a_burst_then_spaces_calls() -> None:
    budget = RateBudget((Window(2, 0.2),))  # 10 a second, bursts of 2
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(4):
        await budget.acquire("T1")
    assert loop.time() - started >= 0.15  # two from the burst, two spaced by 0.1 s
    await budget.acquire("T2")  # another workspace has its own bucket
