"""One question's status: its state, and the single writer that shows it in a chat.

Callers change the state and return at once. The writer posts the first version, then sends the
latest full state at most once per ``min_interval``; when the platform says "retry later" it waits
and sends whatever is latest by then. Because only the writer sends and every edit carries the
whole state, a late or retried edit can never overwrite a newer one.

Once the state is handed over (``hand_over``) the writer sends nothing more, whatever it was doing:
every send checks that the status is still the writer's to write. Its waits are ``asyncio.timeout``
blocks in its own task, never ``asyncio.wait_for`` around another task (on Python 3.11 that can
swallow the cancellation that stops it, when its inner task has just finished). A platform that
keeps asking to retry later is tried again only until the question's delivery deadline
(``bot.chat.deadline``).
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bot.chat import deadline
from bot.chat.ratelimit import RetryLaterError
from graph import AnswerSentence, FindingStatus
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

Phase = Literal["starting", "queued", "researching", "done", "failed", "interrupted"]
FINAL_PHASES: frozenset[Phase] = frozenset({"done", "failed", "interrupted"})


@dataclass
class Row:
    status: FindingStatus | None = None  # None: not finished
    sources: int = 0
    seconds: float = 0.0
    reason: str = ""
    started: bool = False  # the branch has begun (a plan shows it "in progress", not "pending")
    links: tuple[tuple[str, str], ...] = ()  # (url, title) of its sources; a platform picks what it shows


@dataclass
class StatusState:
    """Everything a status message shows; each edit renders all of it."""

    phase: Phase = "starting"
    queue_position: int = 0
    rows: dict[str, Row] = field(default_factory=dict)
    follow_ups: dict[tuple[str, str], Row] = field(default_factory=dict)  # (entity, collection)
    summary: str = ""
    searching: str = ""  # a follow-up: the standalone question it was rewritten to
    # A model-written answer's sentences, each added once it has passed verification (where the
    # platform shows the answer as it is written: Slack's stream, the Teams status card).
    answer: list[AnswerSentence] = field(default_factory=list)


class StatusSink(Protocol):
    """How a platform shows a status: post it once, then edit that message in place."""

    async def post_status(self, state: StatusState) -> None: ...

    async def edit_status(self, state: StatusState) -> None:
        """May raise ``RetryLaterError``; any other ``ConferError`` means this edit failed."""
        ...


def _worth_showing(state: StatusState) -> bool:
    """A status appears once the question waits in line or research has begun: a direct reply
    (a greeting, help) never gets one, and nothing upstream has to guess which questions those are."""
    return state.phase == "queued" or bool(state.rows)


class StatusWriter:
    def __init__(self, sink: StatusSink, *, min_interval: float = 1.0) -> None:
        self.state = StatusState()
        self._sink = sink
        self._min_interval = min_interval
        self._version = 0
        self._sent_version = -1  # nothing posted yet
        self._last_sent = 0.0
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._post_settled = asyncio.Event()
        self._posting = False
        self._hurry = False  # flush(): send the latest state without waiting out the interval
        self._sent = asyncio.Event()  # set after each send (flush() waits on it)
        self._at_once = False  # update(at_once=True): the next send does not wait out the interval
        self._handed_over = False  # the caller sends the rest: the writer sends nothing more
        self.posted = False

    def start(self) -> None:
        """Start the writer; it posts as soon as there is something to show."""
        if self._task is None:
            self._task = asyncio.create_task(self._write_loop(), name="confer-status-writer")

    def update(self, change: Callable[[StatusState], None], *, at_once: bool = False) -> None:
        """Change the state; the writer sends it, coalesced with other changes. ``at_once``: the
        next send does not wait out ``min_interval`` (an answer's verified sentence; the
        platform's own budget still applies)."""
        change(self.state)
        self._version += 1
        self._at_once = self._at_once or at_once
        self._changed.set()

    async def first_post(self) -> None:
        """Wait until a status that is worth showing has been posted (or failed to post), so that
        nothing posted later in the thread can land above it."""
        if self._task is None or not _worth_showing(self.state):
            return
        settled = asyncio.ensure_future(self._post_settled.wait())
        try:
            await asyncio.wait([settled, self._task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            settled.cancel()

    async def flush(self, *, wait: float) -> None:
        """Send the latest state now, not after the coalescing interval, and return once it was
        sent (or failed), or after ``wait`` seconds (a platform asking to retry later may hold it
        longer). Call it with a finished state before posting the answer: nothing posted next in
        the thread then sits under a status that still says "searching…"."""
        if self._task is None or self._task.done():
            return
        target = self._version
        self._hurry = True
        self._changed.set()
        try:
            async with asyncio.timeout(wait):
                while self._sent_version < target and not self._task.done():
                    self._sent.clear()
                    sent = asyncio.ensure_future(self._sent.wait())
                    try:
                        await asyncio.wait([sent, self._task], return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        sent.cancel()
        except TimeoutError:
            logger.info("status not updated before the answer", extra={"seconds": wait})
        finally:
            self._hurry = False

    async def hand_over(self) -> StatusState:
        """Stop the writer without sending what is pending, and give the state to the caller, who
        sends the rest itself (a streamed status ends in the same call that adds the answer). A
        first post in flight is waited for (it creates the message); an edit in flight is abandoned:
        streamed updates carry whole task states, so resending them is harmless."""
        self._closing = True
        if self._task is not None and self._posting:
            await self.first_post()
        self._handed_over = True  # from here on no send of the writer's goes out
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._post_settled.set()
        return self.state

    async def close(self, *, wait: float = 600.0) -> None:
        """Let the writer send the final state, then stop it. Under load the platform's budget decides
        when that is, so the wait is long; shutdown cancels it sooner."""
        self._closing = True
        self._changed.set()
        if self._task is None or self._task.done():  # never started, finished, or handed over
            return
        await asyncio.wait([self._task], timeout=min(wait, deadline.remaining()))
        if not self._task.done():
            self._handed_over = True  # nothing more goes out, even if the cancellation is late
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _wait_urgent(self) -> None:
        while not (self._at_once or self._closing or self._hurry):
            await self._changed.wait()
            self._changed.clear()

    async def _write_loop(self) -> None:
        while not self._handed_over:
            if self._sent_version == self._version:
                if self._closing:
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            if not self.posted:
                if not _worth_showing(self.state):
                    if self._closing:
                        return  # nothing was ever worth a message (a greeting, an early failure)
                    self._sent_version = self._version
                    self._sent.set()
                    continue
                version = self._version
                self._posting = True
                try:  # hand_over() waits for a first post in flight: it creates the message
                    await self._sink.post_status(self.state)
                except ConferError:
                    logger.warning("could not post the status message")
                    return  # nothing to edit later
                finally:
                    self._posting = False
                    self._post_settled.set()
                self.posted = True
                self._sent_version = version
                self._last_sent = time.monotonic()
                self._sent.set()
                continue
            wait = self._last_sent + self._min_interval - time.monotonic()
            if wait > 0 and not (self._closing or self._hurry or self._at_once):
                self._changed.clear()
                with contextlib.suppress(TimeoutError):  # an urgent change ends the wait early
                    async with asyncio.timeout(wait):
                        await self._wait_urgent()
            if self._handed_over:
                return  # the status is no longer the writer's to write
            self._at_once = False
            version = self._version
            try:
                await self._sink.edit_status(self.state)
            except RetryLaterError as later:
                if not deadline.allows(later.retry_after):
                    logger.warning("status edits still asked to wait at the delivery deadline; stopped")
                    return
                await asyncio.sleep(later.retry_after)
                continue  # the next attempt sends whatever is latest by then
            except ConferError:
                logger.warning("status edit failed")
                if self._closing:
                    return
            self._last_sent = time.monotonic()
            self._sent_version = version
            self._sent.set()
