"""A question's delivery deadline: the moment after which nothing waits to try a chat call again.

``answer_in_thread`` sets it for everything one question does (its status writer, its stream, the
platform's own resends of each call: they all run in the question's context), at the question's
time-out plus the delivery time (``CONFER_DELIVERY_SECONDS``). A loop that would wait past it (a
429's ``Retry-After``, a growing pause after a 5xx) gives up instead and lets the caller fall back:
post the answer another way, or say it could not be posted. So a platform that keeps asking to retry
later can hold a question only until then, plus the calls already on their way.
"""

import contextlib
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Deadline:
    """One question's deadline (``time.monotonic``); moved later once, when research starts after
    a wait in the queue, and seen at once by every task the question started."""

    at: float


_DEADLINE: ContextVar[Deadline | None] = ContextVar("confer_delivery_deadline", default=None)


@contextlib.contextmanager
def delivery_deadline(at: float) -> Iterator[Deadline]:
    """Bound every retry inside the block (and in tasks it starts) by ``at`` (``time.monotonic``)."""
    token = _DEADLINE.set(deadline := Deadline(at))
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def remaining() -> float:
    """Seconds left before the deadline (0 once past it; infinite where none is set)."""
    deadline = _DEADLINE.get()
    return math.inf if deadline is None else max(0.0, deadline.at - time.monotonic())


def allows(pause: float) -> bool:
    """Whether waiting ``pause`` seconds before trying again still ends before the deadline."""
    return pause < remaining()
