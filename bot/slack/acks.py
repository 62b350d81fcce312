"""Acks first: the events Confer listens to are acknowledged before Bolt looks at them, and Bolt's
work for them (middleware, listener matching, the listener itself) waits until the burst they came
in has been acknowledged.

Slack delivers mentions in bursts (a busy channel, the redeliveries after an outage), every request
must be acknowledged within three seconds, and the acks share one event loop with the questions.
Bolt acks an event only after its middleware chain and listener matching (about two thirds of a
request's work on the loop) and then starts the listener at once, so that the first requests'
listeners (thread memory, the research, its status posts and their new connections) ran between the
later requests' acks: in `make bench` a cold burst's ack p50 read 1.5–2 × the floor. Bolt's answer
to such an event does not depend on that work: with process_before_response off, every event a
listener matches is acked with an empty 200 before the listener runs (its errors are only logged),
and events from the bot itself are acked the same way."""

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

logger = logging.getLogger(__name__)

SLACK_EVENTS = "/slack/events"
# The longest an acked event's work waits for the rest of its burst: a burst of 120 takes about
# 30–60 ms of the loop on a 2-core machine; under traffic that never pauses an event's work starts
# anyway after this, so no answer is held up for long.
LONGEST_WAIT = 0.2
# How long no request must be in flight for a burst to count as acked: its requests reach the loop
# over a few milliseconds, and the loop can run out of them between two reads of its sockets.
QUIET = 0.005


class AckWindow:
    """Counts the requests to ``/slack/events`` between their arrival and their response (its
    ``middleware`` goes on the aiohttp app), and starts deferred work once none has been in flight
    for ``quiet`` seconds (a lone request's work waits that long), or after ``longest_wait``."""

    def __init__(self, *, longest_wait: float = LONGEST_WAIT, quiet: float = QUIET) -> None:
        self._longest_wait = longest_wait
        self._quiet = quiet
        self._in_flight = 0
        self._quieting: asyncio.TimerHandle | None = None
        self._settled: asyncio.Future[None] | None = None
        self._work: set[asyncio.Task[Any]] = set()
        self._deferred: deque[Coroutine[Any, Any, None]] = deque()
        self._starter: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != SLACK_EVENTS:
            return await handler(request)
        if self._quieting is not None:
            self._quieting.cancel()
            self._quieting = None
        self._in_flight += 1
        try:
            return await handler(request)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._quieting = asyncio.get_running_loop().call_later(self._quiet, self._release)

    def _release(self) -> None:
        self._quieting = None
        if self._settled is not None:
            self._settled.set_result(None)
            self._settled = None

    async def settled(self) -> None:
        """Return once no Slack request has been waiting for its ack for ``quiet`` seconds, or
        after ``longest_wait``."""
        if not self._in_flight and self._quieting is None:
            return
        if self._settled is None:
            self._settled = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._longest_wait):
                # Shielded: one waiter's timeout must not cancel the future the others wait on.
                await asyncio.shield(self._settled)

    def defer(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` once the acks in flight are written, in the order deferred (each in a task
        of its own, created then: the ack path only queues it)."""
        self._deferred.append(work)
        if self._starter is None:
            self._starter = asyncio.create_task(self._start_deferred(), name="confer-slack-events")
            self.track(self._starter)

    def track(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` as an acked event's work (Bolt runs each listener in a task of its own)."""
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def _start_deferred(self) -> None:
        try:
            await self.settled()
            while self._deferred:
                self.track(asyncio.create_task(self._deferred.popleft(), name="confer-slack-event"))
        finally:
            self._starter = None
            while self._deferred:  # cancelled while waiting: nothing of it will run
                self._deferred.popleft().close()

    async def flush(self, within: float) -> None:
        """Wait up to ``within`` seconds for the acked events' work (at shutdown: the events acked
        a moment ago get their questions queued, or their askers told, before anything is closed;
        without this they were acked and then lost)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        # A listener Bolt starts from deferred work is tracked in its first step, before this wakes.
        while self._work and loop.time() < deadline:
            await asyncio.wait(set(self._work), timeout=deadline - loop.time())


class AckFirstApp(AsyncApp):
    """Bolt, acking the Events API events of ``acked_events`` types at once, with the empty 200 Bolt
    would answer, and dispatching them to Bolt once the acks in flight are written. Every other
    request (commands, interactions, URL verification, events no listener takes, which Bolt answers
    with a 404) goes through Bolt as it comes. The request was verified before (``bot.slack.verify``);
    Bolt verifies it again when it dispatches it."""

    def __init__(self, *, acks: AckWindow, acked_events: frozenset[str], **bolt: Any) -> None:
        super().__init__(**bolt)
        self._acks = acks
        self._acked_events = acked_events

    def acks_first(self, body: Mapping[str, Any] | None) -> bool:
        """Whether a request with this (parsed) body is an event acked before Bolt looks at it."""
        if body is None or body.get("type") != "event_callback":
            return False
        event = body.get("event")
        return isinstance(event, dict) and event.get("type") in self._acked_events

    def dispatch_later(self, request: Callable[[], AsyncBoltRequest]) -> None:
        """Dispatch the request ``request()`` builds to Bolt once the acks in flight are written
        (an event ``acks_first`` takes, already acknowledged with an empty 200): the HTTP server
        acks such events without building Bolt's request at all."""
        self._acks.defer(self._dispatch_acked(request))

    async def async_dispatch(self, req: AsyncBoltRequest) -> BoltResponse:
        if not self.acks_first(req.body):
            return await super().async_dispatch(req)
        self.dispatch_later(lambda: req)
        return BoltResponse(status=200, body="")

    async def _dispatch_acked(self, request: Callable[[], AsyncBoltRequest]) -> None:
        try:
            response = await super().async_dispatch(request())
        except Exception as error:  # as for a request: one line, no traceback per event
            logger.warning("could not handle a signed slack event", extra={"error": type(error).__name__})
            return
        if response.status != 200:
            logger.warning("Bolt refused an acked slack event", extra={"status": response.status})
