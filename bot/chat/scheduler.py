"""Running questions in the background: at most N at once, the rest in a FIFO queue, every task
referenced (Bolt keeps none), and a graceful drain on shutdown."""

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

PositionCallback = Callable[[int], Awaitable[None]]


class ShuttingDownError(ConferError):
    """No new questions are taken: the process is stopping."""


class QuestionScheduler:
    def __init__(self, *, max_concurrent: int) -> None:
        self._max = max_concurrent
        self._running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self.accepting = True

    def submit(self, job: Coroutine[Any, Any, None], *, name: str = "confer-question") -> asyncio.Task[None]:
        if not self.accepting:
            job.close()
            raise ShuttingDownError("shutting down")
        task = asyncio.create_task(job, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("question task failed", exc_info=task.exception())

    @contextlib.asynccontextmanager
    async def slot(self, on_queued: PositionCallback | None = None) -> AsyncIterator[None]:
        """Hold one of the N slots; while waiting, ``on_queued`` hears how many are ahead."""
        if self._running >= self._max or self._waiters:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            if on_queued is not None:
                await on_queued(len(self._waiters))
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._release()  # we were handed a slot but will not use it
                raise
        else:
            self._running += 1
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes straight to the next in line
                return
        self._running -= 1

    async def drain(self, grace: float) -> int:
        """Stop accepting, wait up to ``grace`` seconds, cancel what is left; return how many."""
        self.accepting = False
        pending = set(self._tasks)
        if not pending:
            return 0
        _, unfinished = await asyncio.wait(pending, timeout=grace)
        for task in unfinished:
            task.cancel()
        if unfinished:
            await asyncio.wait(unfinished, timeout=10)
        return len(unfinished)
