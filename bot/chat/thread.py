"""One question in one thread, the same on every platform.

A platform implements ``ChatThread`` (post and edit a status, post an answer, say a sentence); this
module runs the question's life over it: waiting for a slot (the status shows the queue position),
research with the status updated as each sub-agent finishes, the answer, and one of the endings:
answered (or partial), timed out, interrupted, failed.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol, runtime_checkable

from bot import messages
from bot.chat import deadline
from bot.chat.feedback import AnswerRecord, FeedbackDesk, asker_id, new_question_id
from bot.chat.memory import ThreadKey
from bot.chat.progress import Phase, Row, StatusSink, StatusState, StatusWriter
from bot.chat.render import AnswerFooter, plain_answer, takes_votes
from bot.chat.scheduler import QuestionScheduler
from bot.chat.service import QuestionTimeoutError, ResearchService, Surface
from bot.errors import ChatCallError
from bot.telemetry import span
from graph import (
    Answer,
    BranchFinished,
    BranchStarted,
    FollowUp,
    PlanReady,
    ProgressEvent,
    Question,
    SentenceVerified,
)

logger = logging.getLogger(__name__)

# Seconds a ready answer waits for its suggested follow-ups (without a model they take a few
# milliseconds); a model's come later and are added to the answer already shown.
SUGGESTIONS_WAIT = 0.25
# At most this long the answer waits for the status's final edit (a platform's "retry later" can
# hold an edit longer; the answer then goes out and the final edit follows).
STATUS_FLUSH_WAIT = 2.0


class ChatThread(StatusSink, Protocol):
    """The port a platform implements for one thread (a Slack thread, a Teams reply chain)."""

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        """Post the answer with its ``footer`` (feedback buttons, suggested follow-ups). Raises
        ``ChatCallError`` when the platform refuses it for good."""
        ...

    async def say(self, text: str) -> None:
        """Post one sentence from ``bot.messages``; failures are logged, never raised."""
        ...


@runtime_checkable
class StreamingThread(Protocol):
    """A capability some threads have: the status is one live message the answer is added to
    (Slack's streamed plan). The core then hands the final state and the answer over together,
    and ends the stream on every other ending."""

    @property
    def streaming(self) -> bool:
        """Whether a live status message is open now (it may have fallen back to edits)."""
        ...

    async def finish_stream(
        self, state: StatusState, answer: Answer, footer: "asyncio.Future[AnswerFooter]"
    ) -> None:
        """Show ``state`` and ``answer`` in the live message and close it with ``footer`` (the
        answer's text goes out first when the footer is not done yet: suggested follow-ups may
        still be coming); fall back to posting the answer when the platform refuses. Raises
        ``ChatCallError`` when nothing could be posted."""
        ...

    async def end_stream(self) -> None:
        """Close the live message if one is open (after a failure); never raises."""
        ...


@runtime_checkable
class LiveAnswer(Protocol):
    """A capability some threads have: their status shows a model-written answer as it is
    verified, sentence by sentence (Slack's stream, the Teams status card)."""

    @property
    def shows_sentences(self) -> bool: ...


@runtime_checkable
class PlainAnswer(Protocol):
    """A capability some threads have: their answer shows no footer (a private reply), so no
    suggested follow-ups are asked for."""

    plain_answer: bool


@runtime_checkable
class EditableAnswer(Protocol):
    """A capability some threads have: the answer they posted last can be replaced in place. The
    core uses it to add suggested follow-ups that came after the answer was posted."""

    async def edit_answer(self, answer: Answer, footer: AnswerFooter) -> None:
        """Show the posted answer again with ``footer``. Raises ``ChatCallError``."""
        ...


def _finish(phase: Phase, summary: str) -> Callable[[StatusState], None]:
    def change(state: StatusState) -> None:
        state.phase, state.summary = phase, summary

    return change


def done_summary(answer: Answer, seconds: float) -> str:
    return messages.status_done(
        seconds=seconds,
        collections=len(answer.outcomes),
        sources=len(answer.citations),
        unavailable=sum(1 for o in answer.outcomes if o.status in ("failed", "timeout")),
    )


def _progress(writer: StatusWriter, thread: object = None) -> Callable[[ProgressEvent], Awaitable[None]]:
    async def on_event(event: ProgressEvent) -> None:
        if isinstance(event, SentenceVerified):
            if isinstance(thread, LiveAnswer) and thread.shows_sentences:
                writer.update(lambda s: s.answer.append(event.sentence), at_once=True)
        elif isinstance(event, PlanReady) and event.collections:
            writer.update(
                lambda s: s.rows.update({name: s.rows.get(name, Row()) for name in event.collections})
            )
        elif isinstance(event, BranchStarted):
            writer.update(lambda s: _started(s, event))
        elif isinstance(event, FollowUp):
            writer.update(lambda s: s.follow_ups.update({target: Row() for target in event.targets}))
        elif isinstance(event, BranchFinished):
            row = Row(
                status=event.status,
                sources=event.sources,
                seconds=event.seconds,
                reason=event.reason,
                started=True,
                links=event.links,
            )
            if event.round > 1:
                target = (event.entity, event.collection)
                writer.update(lambda s: s.follow_ups.__setitem__(target, row))
            else:
                writer.update(lambda s: s.rows.__setitem__(event.collection, row))

    return on_event


def _started(state: StatusState, event: BranchStarted) -> None:
    if event.round > 1:
        row = state.follow_ups.get((event.entity, event.collection))
    else:
        row = state.rows.get(event.collection)
    if row is not None and row.status is None:
        row.started = True


async def answer_in_thread(
    thread: ChatThread,
    *,
    service: ResearchService,
    scheduler: QuestionScheduler,
    question: Question,
    surface: Surface,
    status_interval: float = 1.0,
    on_undelivered: Callable[[], Awaitable[None]] | None = None,
    searching: str = "",
    key: ThreadKey | None = None,
    feedback: FeedbackDesk | None = None,
    fresh: bool = False,
    asker: str = "",
) -> Answer | None:
    """Answer ``question`` in ``thread``; never raises except ``CancelledError``. When nothing at all
    reached the thread (neither the status nor the answer, and the answer's post surely did not
    land), ``on_undelivered`` tells the asker another way (Slack: an ephemeral message). Returns
    the answer once posted (for thread memory). ``key`` names the thread; with ``feedback`` the
    answer's record is kept for votes on it, and its trace for ``asker`` (the platform's id of who
    asked) to open. No retry waits past the question's time-out plus ``service.delivery_timeout``,
    counted from when the question leaves the queue (``bot.chat.deadline``)."""
    bound = service.question_timeout + service.delivery_timeout
    with deadline.delivery_deadline(time.monotonic() + bound) as until:
        writer = StatusWriter(thread, min_interval=status_interval)
        if searching:  # a follow-up: the status shows the question it became
            writer.update(lambda s: setattr(s, "searching", searching))
        writer.start()
        started = time.monotonic()
        answered: Answer | None = None
        suggesting: asyncio.Task[AnswerFooter] | None = None
        try:

            async def queued(position: int) -> None:
                def change(state: StatusState) -> None:
                    state.phase, state.queue_position = "queued", position

                writer.update(change)

            async with scheduler.slot(on_queued=queued):
                until.at = time.monotonic() + bound  # the time budget starts with the research
                writer.update(lambda s: setattr(s, "phase", "researching"))
                answer = await service.answer(
                    question, surface=surface, on_event=_progress(writer, thread), fresh=fresh
                )
            footer = await answer_footer(service, question, answer, key=key, feedback=feedback, asker=asker)
            if isinstance(thread, PlainAnswer) and thread.plain_answer:
                suggesting = asyncio.create_task(_as_is(footer))
            else:
                suggesting = asyncio.create_task(_with_suggestions(service, question, answer, footer))
            with span("delivery"):
                await asyncio.wait({suggesting}, timeout=SUGGESTIONS_WAIT)
                await writer.first_post()  # the status stays above the answer
                if isinstance(thread, StreamingThread) and thread.streaming:
                    writer.update(_finish("done", done_summary(answer, time.monotonic() - started)))
                    await thread.finish_stream(await writer.hand_over(), answer, suggesting)
                    answered = answer
                else:
                    # suggestions still coming go out with the answer where it cannot be edited, else later
                    late = thread if isinstance(thread, EditableAnswer) and not suggesting.done() else None
                    # The status is final before the answer appears under it, never "searching…" above it.
                    writer.update(_finish("done", done_summary(answer, time.monotonic() - started)))
                    await writer.flush(wait=STATUS_FLUSH_WAIT)
                    await thread.post_answer(answer, footer if late else await suggesting)
                    answered = answer
                    if late is not None:
                        await _add_late_suggestions(late, answer, footer, suggesting)
        except QuestionTimeoutError:
            writer.update(_finish("failed", messages.STATUS_TIMED_OUT))
            await thread.say(messages.TIMED_OUT)
        except asyncio.CancelledError:
            if answered is None:  # once the answer is posted, only a late status edit is lost
                writer.update(_finish("interrupted", messages.STATUS_INTERRUPTED))
                await asyncio.shield(_finish_interrupted(thread, writer))
            raise
        except ChatCallError as error:
            logger.warning("could not post the answer", extra={"method": error.method, "error": error.error})
            await _tell_not_posted(thread, writer, error, on_undelivered)
        except Exception:
            logger.exception("question failed")
            writer.update(_finish("failed", messages.STATUS_UNEXPECTED))
            await thread.say(messages.UNEXPECTED)
        finally:
            if suggesting is not None:
                suggesting.cancel()  # an answer that never went out needs no suggestions
        await writer.close()
        if isinstance(thread, StreamingThread):
            await thread.end_stream()
        return answered


async def _tell_not_posted(
    thread: ChatThread,
    writer: StatusWriter,
    error: ChatCallError,
    on_undelivered: Callable[[], Awaitable[None]] | None,
) -> None:
    """The answer's post failed with ``error``: tell the asker once, and only what is true.

    A post whose reply was lost (a broken connection, a time-out) may have been applied: the reply
    of Slack's ``chat.postMessage`` (its ``ts``; https://docs.slack.dev/reference/methods/chat.postMessage)
    or of a Teams reply is the only word on it, and when the conversation cannot be read to look for
    it either (Slack's ``conversations.history`` or ``.replies`` failing) the error stays
    ``uncertain``. Such a post is never called failed, whatever the timing: the asker may be reading
    the answer. The status says so when there is one; without one (an answer from the cache comes
    before anything is worth a status; the status's own post was lost) the same sentence is posted
    where the answer went. Only a post known not to have landed, with no status either, is told the
    other way (``on_undelivered``: "your question was not answered")."""
    uncertain = bool(getattr(error, "uncertain", False))
    summary = messages.STATUS_POST_UNCERTAIN if uncertain else messages.STATUS_POST_FAILED
    writer.update(_finish("failed", summary))
    if writer.posted:
        return  # the status's final edit says it
    if uncertain:
        await thread.say(messages.POST_UNCERTAIN)
    elif on_undelivered is not None:
        await on_undelivered()


async def _as_is(footer: AnswerFooter) -> AnswerFooter:
    return footer


async def _with_suggestions(
    service: ResearchService, question: Question, answer: Answer, footer: AnswerFooter
) -> AnswerFooter:
    """``footer`` with the follow-ups the answer leaves open; none when building them fails."""
    try:
        suggestions = await service.suggest(question, answer)
    except Exception:  # suggestions are an extra: they never cost the answer
        logger.exception("suggested follow-ups failed; answering without them")
        return footer
    return replace(footer, suggestions=suggestions)


async def _add_late_suggestions(
    thread: EditableAnswer, answer: Answer, footer: AnswerFooter, suggesting: "asyncio.Task[AnswerFooter]"
) -> None:
    """The answer went out without its suggested follow-ups (a model still writing them): add them
    to it once they come; a failed edit loses only the buttons."""
    full = await suggesting
    if not full.suggestions:
        return
    try:
        await thread.edit_answer(answer, full)
    except ChatCallError as error:
        logger.warning(
            "could not add suggested follow-ups", extra={"method": error.method, "error": error.error}
        )


async def answer_footer(
    service: ResearchService,
    question: Question,
    answer: Answer,
    *,
    key: ThreadKey | None,
    feedback: FeedbackDesk | None,
    asker: str = "",
) -> AnswerFooter:
    """What goes under the answer before its suggested follow-ups: a new question id; for an answer
    people can vote on ("not found" included), where votes can be kept, its record is kept under
    that id before the buttons carrying it are posted, and its trace beside it ("How I found this"),
    for ``asker`` (the platform's id of who asked) only."""
    question_id = new_question_id()  # also names the footer's blocks, unique per message
    await service.remember_posted(question_id, answer)  # a 👎 on it evicts its cached copy
    if feedback is None or key is None or not takes_votes(answer):
        return AnswerFooter(question_id=question_id)
    await feedback.keep_answer(
        AnswerRecord(
            question_id=question_id,
            platform=key.platform,
            workspace=key.workspace,
            channel=key.channel,
            thread=key.thread,
            answer=plain_answer(answer, service.config),
            passage_ids=tuple(dict.fromkeys(c.passage.id for c in answer.citations)),
            collections=tuple(o.name for o in answer.outcomes),
        )
    )
    traced = answer.trace is not None and await feedback.keep_trace(
        question_id, answer.trace, asker=asker_id(question_id, key.platform, asker)
    )
    return AnswerFooter(question_id=question_id, traced=traced)


async def _finish_interrupted(thread: ChatThread, writer: StatusWriter) -> None:
    await thread.say(messages.INTERRUPTED)
    await writer.close(wait=10)
    if isinstance(thread, StreamingThread):
        await thread.end_stream()
