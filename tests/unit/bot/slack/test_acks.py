import asyncio
import contextlib

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.slack.acks import AckWindow


class Request:
    """A request to ``path`` held in its handler until ``answer`` is called."""

    def __init__(self, window: AckWindow, path: str = "/slack/events") -> None:
        self._answered = asyncio.Event()

        async def handler(_: web.Request) -> web.StreamResponse:
            await self._answered.wait()
            return web.Response()

        self.task = asyncio.create_task(window.middleware(make_mocked_request("POST", path), handler))

    async def answer(self) -> None:
        self._answered.set()
        await self.task


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_deferred_work_waits_for_every_ack_in_flight_then_runs_in_order() -> None:
    window = AckWindow(longest_wait=60)
    ran: list[int] = []

    async def work(n: int) -> None:
        ran.append(n)

    first, second = Request(window), Request(window)
    await _turns()
    assert window.in_flight == 2
    for n in range(3):
        window.defer(work(n))
    await first.answer()
    await _turns()
    assert ran == []  # one request still waits for its ack
    await second.answer()
    await window.flush(within=5)
    assert ran == [0, 1, 2]
    assert window.in_flight == 0


async def test_work_deferred_with_no_ack_in_flight_runs_at_once() -> None:
    window = AckWindow(longest_wait=60)
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    other = Request(window, path="/metrics")  # only /slack/events is counted
    await _turns()
    window.defer(work())
    await window.flush(within=5)
    assert ran == ["ran"] and window.in_flight == 0
    await other.answer()


async def test_deferred_work_does_not_wait_past_the_longest_wait() -> None:
    window = AckWindow(longest_wait=0.01)
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    stuck = Request(window)
    await _turns()
    window.defer(work())
    await window.flush(within=30)
    assert ran == ["ran"] and window.in_flight == 1
    await stuck.answer()


async def test_a_request_that_fails_is_no_longer_counted() -> None:
    window = AckWindow(longest_wait=60)

    async def failing(_: web.Request) -> web.StreamResponse:
        raise web.HTTPBadRequest()

    with contextlib.suppress(web.HTTPBadRequest):
        await window.middleware(make_mocked_request("POST", "/slack/events"), failing)
    assert window.in_flight == 0


async def test_flush_waits_for_the_listeners_that_deferred_work_started() -> None:
    window = AckWindow(longest_wait=60)
    started: list[asyncio.Task[None]] = []
    finished: list[str] = []

    async def listener() -> None:
        current = asyncio.current_task()
        assert current is not None
        window.track(current)
        await _turns()
        finished.append("listener")

    async def dispatch() -> None:  # as Bolt does: the listener in a task of its own
        started.append(asyncio.create_task(listener()))

    window.defer(dispatch())
    await window.flush(within=30)
    assert finished == ["listener"]


async def test_deferred_work_waits_for_a_quiet_moment_after_the_last_ack() -> None:
    window = AckWindow(longest_wait=0.05, quiet=60)
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    request = Request(window)
    await _turns()
    window.defer(work())
    await request.answer()
    await _turns()
    assert ran == [] and window.in_flight == 0  # more of the burst may still come
    await window.flush(within=30)
    assert ran == ["ran"]  # the longest wait is never exceeded
