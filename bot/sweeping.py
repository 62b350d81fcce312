"""A periodic clean-up on the running event loop: expired thread memory, expired answer records."""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


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
