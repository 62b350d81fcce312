"""Spreading a burst over the event loop's turns.

asyncio runs every callback that is ready before it looks at its timers and sockets again. When a
burst of requests arrives at once (Slack redelivers and fans out mentions in bursts), every
request's handler becomes ready in the same turn; each runs to its first real wait (verify, parse,
dispatch, ack, write the response: a few hundred microseconds), so one turn held the loop for
25–30 ms in `make bench` while timers, other connections and status edits waited. A ``TurnGate``
lets at most ``per_turn`` callers through in one turn; the others wait, in order, for the next
turns. The work is the same; it is no longer done in one block."""

import asyncio
from collections import deque


class TurnGate:
    def __init__(self, per_turn: int) -> None:
        if per_turn < 1:
            raise ValueError("per_turn must be at least 1")
        self._per_turn = per_turn
        self._used = 0  # callers let through since the last new turn
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._turn_scheduled = False

    async def enter(self) -> None:
        """Return in this turn if it still has room, else in a later turn (first come, first served)."""
        loop = asyncio.get_running_loop()
        if self._used < self._per_turn and not self._waiters:
            self._used += 1
            self._schedule_turn(loop)
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        self._schedule_turn(loop)
        await waiter  # its place was counted when it was woken

    def _schedule_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        # A callback scheduled now runs in the loop's next turn: that is where the count restarts.
        if not self._turn_scheduled:
            self._turn_scheduled = True
            loop.call_soon(self._new_turn, loop)

    def _new_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        self._turn_scheduled = False
        self._used = 0
        while self._waiters and self._used < self._per_turn:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter (its client went away) takes no place
                waiter.set_result(None)
                self._used += 1
        if self._waiters or self._used:
            self._schedule_turn(loop)
