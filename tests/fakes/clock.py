"""A clock that moves only when something sleeps on it: waits are measured, never spent."""

import asyncio


class FakeClock:
    """``clock()`` for a monotonic clock, ``sleep`` for ``asyncio.sleep``; ``slept`` lists the waits."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)  # still a turn of the event loop, as a real sleep is
