"""Slack's native agent experience for one question: a loading state at once, then one streamed
reply whose plan has a task per sub-agent (and per follow-up), and the verified answer added to the
same message, which ends with the Sources and the feedback buttons.

``StreamedSlackThread`` is the chat core's ``ChatThread`` with the ``StreamingThread`` capability:
the core's status writer drives it exactly as it drives an edited status (post once, then send the
latest state, coalesced), and each send becomes ``chat.startStream`` / ``chat.appendStream`` with
only the tasks whose state changed. The answer comes from the graph's final, verified ``Answer``:
nothing a model writes is streamed before it has passed verification.

When Slack refuses the stream methods (``not_allowed``, ``unknown_method``, ``invalid_chunks``…)
the question carries on over ``SlackThread``'s post-and-edit path with its whole state, and the
workspace is remembered as edit-only for a while (logged once, counted in
``confer_slack_stream_fallbacks_total``).
"""

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from slack_sdk.models.blocks.block_elements import UrlSourceElement
from slack_sdk.models.messages.chunk import MarkdownTextChunk, PlanUpdateChunk, TaskUpdateChunk

from bot import messages
from bot.chat import deadline
from bot.chat.progress import FINAL_PHASES, Row, StatusState
from bot.chat.ratelimit import RetryLaterError
from bot.chat.render import (
    AnswerFooter,
    cite,
    collection_title,
    failed_collections,
    no_answer_text,
    sentences_text,
)
from bot.metrics import ConferMetrics
from bot.slack.blocks import stream_footer
from bot.slack.gateway import RateLimitedError, SlackCallError
from bot.slack.mrkdwn import code_block, neutralize, neutralize_markdown
from bot.slack.thread import LOOK_PAGE, SlackThread
from graph import Answer
from retrieval.collections import CollectionsConfig

logger = logging.getLogger(__name__)

ProgressMode = Literal["stream", "edit"]
TaskStatus = Literal["pending", "in_progress", "complete", "error"]

MAX_MARKDOWN_CHARS = 12_000  # markdown_text per call
MAX_TASK_SOURCES = 5
EDIT_ONLY_SECONDS = 3600.0
NOT_STREAMING = "message_not_in_streaming_state"  # a stream call to a stopped message
APPEND_ATTEMPTS = 4  # an answer's append that keeps answering 429: as many tries as any other call
# Answers that mean "this workspace does not take streams": remembered for EDIT_ONLY_SECONDS.
REFUSALS = frozenset(
    {
        "not_allowed",
        "not_allowed_token_type",
        "unknown_method",
        "method_deprecated",
        "invalid_chunks",
        "not_enabled",
        "feature_not_enabled",
        "missing_scope",
        "no_permission",
        "team_access_not_granted",
    }
)


def fallback_reason(error: str) -> str:
    """A bounded metric label: the refusal itself, or ``other``."""
    return error if error in REFUSALS else "other"


class EditOnlyWorkspaces:
    """Workspaces that refused the stream methods, each until its refusal is ``ttl`` seconds old.
    In-process and bounded; a replica that has not seen the refusal finds out with one call."""

    def __init__(
        self,
        *,
        ttl: float = EDIT_ONLY_SECONDS,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._until: OrderedDict[str, float] = OrderedDict()

    def edit_only(self, team: str) -> bool:
        until = self._until.get(team)
        if until is None:
            return False
        if until <= self._clock():
            del self._until[team]
            return False
        return True

    def remember(self, team: str) -> bool:
        """Mark ``team`` edit-only; True when it was not already (the caller logs that once)."""
        known = self.edit_only(team)
        self._until.pop(team, None)
        self._until[team] = self._clock() + self._ttl
        while len(self._until) > self._max:
            self._until.popitem(last=False)
        return not known


def _http_url(url: str) -> bool:
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not any(c in url for c in "<>| \n")


def _task_status(row: Row) -> TaskStatus:
    if row.status is None:
        return "in_progress" if row.started else "pending"
    return "complete" if row.status in ("ok", "empty") else "error"


def _task(task_id: str, title: str, row: Row) -> dict[str, Any]:
    """One task of the plan; every text from a document or a model neutralized, links only to
    http(s) sources."""
    output = details = None
    sources = None
    if row.status is not None:
        output = messages.task_output(row.status, row.sources, row.reason)
        details = messages.task_details(row.seconds)
        links = [(url, label) for url, label in row.links if _http_url(url)][:MAX_TASK_SOURCES]
        if links:
            sources = [
                UrlSourceElement(url=url.strip(), text=neutralize(label or url)) for url, label in links
            ]
    chunk = TaskUpdateChunk(
        id=task_id, title=title, status=_task_status(row), details=details, output=output, sources=sources
    )
    return chunk.to_dict()


def plan_title(state: StatusState) -> str:
    if state.phase in FINAL_PHASES:
        return state.summary
    if state.phase == "queued":
        return messages.status_queued(state.queue_position)
    if state.searching:
        return messages.searching_for(neutralize(state.searching))
    if not state.rows:
        return messages.STATUS_READING
    return messages.status_researching(len(state.rows)).rstrip(":")


def plan_chunks(state: StatusState, config: CollectionsConfig) -> dict[str, dict[str, Any]]:
    """Every chunk the plan shows for ``state``, by a stable key: its title, the tasks still
    running (in the order they were planned), then the finished ones in the order they finished
    (a round's branches start together, so by their seconds; a follow-up round comes after the
    first). Sent in this order, tasks that finish between two appends still finish in order."""
    chunks: dict[str, dict[str, Any]] = {"plan": PlanUpdateChunk(title=plan_title(state)).to_dict()}
    tasks: list[tuple[tuple[int, float], str, str, Row]] = []
    for n, (name, row) in enumerate(state.rows.items()):
        title = neutralize(collection_title(config, name))
        tasks.append((_rank(row, 1, n), f"search-{name}", title, row))
    for n, ((entity, name), row) in enumerate(state.follow_ups.items(), start=1):
        title = messages.following_up(neutralize(entity), neutralize(collection_title(config, name)))
        tasks.append((_rank(row, 2, n), f"followup-{n}", title, row))
    for _, task_id, title, row in sorted(tasks, key=lambda t: t[0]):
        chunks[task_id] = _task(task_id, title, row)
    return chunks


def _rank(row: Row, round_: int, planned: int) -> tuple[int, float]:
    return (0, planned) if row.status is None else (round_, row.seconds)


def answer_markdown(answer: Answer, config: CollectionsConfig) -> str:
    """The answer's text for ``markdown_text``: verified sentences with their ``[n]`` markers,
    each section under its collection's title, every string neutralized for markdown."""
    parts: list[str] = []
    if not answer.found:
        parts.append(no_answer_text(answer, config, text=neutralize_markdown, code=code_block))
    for section in answer.sections:
        title = neutralize_markdown(collection_title(config, section.collection))
        body = sentences_text(
            section.sentences, lambda sentence: neutralize_markdown(cite(sentence)), code=code_block
        )
        parts.append(f"**{title}**\n{body}" if title else body)
    failed = failed_collections(answer, config)
    if failed:
        parts.append("⚠️ " + neutralize_markdown(messages.partial_note(failed)))
    if answer.cached_at:
        parts.append("🗄️ " + neutralize_markdown(messages.cached_note(answer.cached_at)))
    return "\n\n".join(parts)


def split_markdown(text: str, limit: int = MAX_MARKDOWN_CHARS) -> list[str]:
    """Pieces of at most ``limit`` characters that concatenate back to ``text``, cut after a
    paragraph, a line or a space where there is one (never inside an escape such as ``\\[``)."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = max(text.rfind("\n\n", 0, limit), text.rfind("\n", 0, limit), text.rfind(" ", 0, limit))
        if cut <= 0:
            cut = limit - 1 if text[limit - 1] == "\\" else limit
        else:
            cut += 1
        pieces.append(text[:cut])
        text = text[cut:]
    if text:
        pieces.append(text)
    return pieces


@dataclass
class StreamedSlackThread(SlackThread):
    """A Slack thread whose status is a streamed plan and whose answer joins it (see the module)."""

    user: str = ""
    metrics: ConferMetrics | None = None
    workspaces: EditOnlyWorkspaces = field(default_factory=EditOnlyWorkspaces)
    stream_ts: str | None = None
    _stopped: bool = False
    _finishing: bool = False  # finish_stream has the stream: no status edit may write to it
    _sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    _shown: str = ""  # the answer's text appended so far: verified sentences only
    _shown_sentences: int = 0

    @property
    def shows_sentences(self) -> bool:
        """A model-written answer's verified sentences join the stream as they come."""
        return self.streaming

    @property
    def can_stream(self) -> bool:
        """Streams are replies in a thread (a direct message answered in the conversation itself
        is not one), to a person (``recipient_user_id``), in a workspace that takes them."""
        return bool(self.thread_ts and self.user) and not self.workspaces.edit_only(self.team)

    @property
    def streaming(self) -> bool:
        return self.stream_ts is not None and not self._stopped

    async def set_loading(self) -> None:
        """The loading state under the question, at once; best effort (it clears by itself)."""
        try:
            await self.gateway.call(
                "assistant.threads.setStatus",
                retry_rate_limited=False,
                attempts=1,
                channel_id=self.channel,
                thread_ts=self.thread_ts,
                status=messages.LOADING_STATUS,
            )
        except (SlackCallError, RateLimitedError):
            logger.debug("no loading state for this thread")

    async def post_status(self, state: StatusState) -> None:
        if not self.can_stream:
            await super().post_status(state)
            return
        chunks = plan_chunks(state, self.config)
        try:
            response = await self.gateway.call(
                "chat.startStream",
                channel=self.channel,
                thread_ts=self.thread_ts,
                recipient_user_id=self.user,
                recipient_team_id=self.team,
                task_display_mode="plan",
                chunks=list(chunks.values()),
            )
        except SlackCallError as error:
            found = await self._started_anyway() if error.uncertain else None
            if found is None:
                self._fall_back(error.error)
                await super().post_status(state)
                return
            response = {"ts": found}  # its reply was lost: the plan is resent whole by the next append
            chunks = {}
        self.stream_ts = str(response.get("ts", ""))
        self._sent = chunks

    async def _started_anyway(self) -> str | None:
        """After a ``chat.startStream`` whose reply was lost (Slack may have started it): the ts of
        Confer's newest message in the thread, taken as that stream. If it was an earlier answer,
        Slack answers the next append ``message_not_in_streaming_state`` and the question carries
        on by post and edit, as when the stream was never started; a stream that was started is
        written to and stopped, never left open. ``None`` when the thread cannot be read or holds
        nothing of Confer's."""
        if not self.gateway.bot_id:
            return None
        try:
            response = await self.gateway.call(
                "conversations.replies", channel=self.channel, ts=self.thread_ts, limit=LOOK_PAGE
            )
        except SlackCallError:
            return None
        own = [
            str(m.get("ts", ""))
            for m in response.get("messages") or []
            if isinstance(m, dict)
            and m.get("bot_id") == self.gateway.bot_id
            and m.get("ts") != self.thread_ts
        ]
        return max(own, default=None)

    def _changes(self, state: StatusState) -> dict[str, dict[str, Any]]:
        return {k: c for k, c in plan_chunks(state, self.config).items() if self._sent.get(k) != c}

    def _new_sentences(self, state: StatusState) -> tuple[str, int]:
        """The answer's text for the verified sentences not appended yet, and how many there are
        in all: each as ``answer_markdown`` writes it, so the final answer continues this text."""
        text = "".join(
            (" " if n else "") + neutralize_markdown(cite(sentence))
            for n, sentence in enumerate(state.answer)
            if n >= self._shown_sentences
        )
        return text, len(state.answer)

    async def edit_status(self, state: StatusState) -> None:
        if self._finishing:  # the answer's own calls write the rest; a late edit sends nothing
            return
        if not self.streaming:
            if self.status_ts is None:  # the stream broke off: the status is posted as a message now
                await super().post_status(state)
            else:
                await super().edit_status(state)
            return
        changes = self._changes(state)
        text, shown = self._new_sentences(state)
        if not changes and not text:
            return
        chunks = list(changes.values())
        if text:
            chunks.append(MarkdownTextChunk(text=text).to_dict())
        try:
            await self._append(chunks)
        except SlackCallError as error:
            await self._break_off(error.error)
            await super().post_status(state)
            return
        self._sent.update(changes)
        self._shown += text
        self._shown_sentences = shown

    async def _append(self, chunks: list[dict[str, Any]]) -> None:
        """One ``chat.appendStream`` within the workspace's budget; a 429 pauses the budget and is
        handed to the writer, which sends whatever is latest once ``Retry-After`` has passed."""
        await self.within_budget(
            self.gateway.append_budget,
            "chat.appendStream",
            channel=self.channel,
            ts=self.stream_ts,
            chunks=chunks,
        )

    async def _append_waiting(self, chunks: list[dict[str, Any]]) -> None:
        """``_append`` for the answer's text: a 429 is waited out and the same text sent again, at
        most ``APPEND_ATTEMPTS`` times in all and never past the question's delivery deadline; then
        ``SlackCallError`` (the answer is posted instead), so a stream that keeps answering 429
        cannot hold the question forever."""
        for attempt in range(1, APPEND_ATTEMPTS + 1):
            try:
                await self._append(chunks)
                return
            except RetryLaterError as later:
                if attempt == APPEND_ATTEMPTS or not deadline.allows(later.retry_after):
                    raise SlackCallError(method="chat.appendStream", error="ratelimited") from None
                # the budget's pause holds the next attempt back

    async def finish_stream(
        self, state: StatusState, answer: Answer, footer: "asyncio.Future[AnswerFooter]"
    ) -> None:
        """The tasks' last states, the plan's summary, the answer's text and its footer: the text in
        pieces of at most 12,000 characters, the last of them with ``chat.stopStream`` when the
        footer is ready; when it is not (a model still writing suggestions), the whole text is
        appended first and the stream stops once the footer comes. From here on only these calls
        write to the stream (a status edit still on its way sends nothing)."""
        self._finishing = True
        full = answer_markdown(answer, self.config)
        if self._shown and not full.startswith(self._shown):  # never expected: say it, show it all
            logger.warning("the answer does not continue the sentences streamed before it")
        elif self._shown:
            full = full[len(self._shown) :]  # the verified sentences are already in the stream
        pieces = split_markdown(full)
        changes = list(self._changes(state).values())
        ready_now = footer.done()
        try:
            for piece in pieces[:-1] if ready_now else pieces:
                await self._append_waiting([*changes, MarkdownTextChunk(text=piece).to_dict()])
                changes = []
            last = [MarkdownTextChunk(text=pieces[-1]).to_dict()] if ready_now and pieces else []
            ready = await footer
            await self._stop(chunks=[*changes, *last], blocks=stream_footer(answer, self.config, ready))
        except SlackCallError as error:
            await self._break_off(error.error)
            await self.post_answer(answer, await footer)
            return
        self._stopped = True

    async def _stop(self, **params: Any) -> None:
        """``chat.stopStream`` with the answer's end. When its connection broke or timed out, Slack
        is asked again: a stop that never reached it is applied now, and one that was applied is
        answered ``message_not_in_streaming_state``; either way the answer shows once, and it is
        posted as a message only when Slack cannot be asked."""
        try:
            await self.gateway.call("chat.stopStream", channel=self.channel, ts=self.stream_ts, **params)
        except SlackCallError as error:
            if not error.uncertain:
                raise
            try:
                await self.gateway.call("chat.stopStream", channel=self.channel, ts=self.stream_ts, **params)
            except SlackCallError as again:
                if again.error != NOT_STREAMING:
                    raise
            logger.info("a stream stop whose connection broke was asked again; the answer is shown")

    def look_from(self) -> str:
        return self.stream_ts or super().look_from()

    async def end_stream(self) -> None:
        if not self.streaming:
            return
        self._stopped = True
        try:
            await self.gateway.call("chat.stopStream", channel=self.channel, ts=self.stream_ts)
        except SlackCallError:
            logger.warning("could not stop a stream")

    async def _break_off(self, error: str) -> None:
        """A stream Slack stopped taking: close what it shows and carry on over post-and-edit."""
        self._fall_back(error)
        await self.end_stream()

    def _fall_back(self, error: str) -> None:
        reason = fallback_reason(error)
        if self.metrics is not None:
            self.metrics.slack_stream_fallbacks.labels(reason).inc()
        if reason != "other" and self.workspaces.remember(self.team):
            logger.warning(
                "slack refused streaming; this workspace gets edited status messages for a while",
                extra={"error": error, "team": self.team},
            )
