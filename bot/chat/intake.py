"""One intake for every platform: a parsed message in, what became of it out.

A platform adapter parses its payload into a ``Message``, hands it to ``Intake.take`` with a way to
open the thread the answer goes to, and renders the ``Taken`` it gets back (a usage line, the
collections list, a refusal, "shutting down"). Everything between happens here, once, for every
platform: redeliveries dropped, ``help`` and ``list`` recognised, the place's policy applied, the
question queued, read with the thread's earlier turns, answered in its thread and remembered there.
Votes on answers come in here too.

``take`` does only quick work (a platform acknowledges within seconds): the question is checked
against the place's policy as written, and understood with the thread's memory (which may ask the
model to rewrite a follow-up) once it has been queued.
"""

import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from bot import messages
from bot.chat import trace_messages
from bot.chat.access import PlaceDeniedError, allowed_collections, listed_places, policy_for
from bot.chat.audience import Asker, restricted_matches
from bot.chat.conversations import Conversations, Prepared
from bot.chat.dedupe import EventDeduplicator
from bot.chat.feedback import FeedbackDesk, FeedbackUnavailableError, Place, Reason, Vote, VoteRecord
from bot.chat.memory import ThreadKey
from bot.chat.render import collection_title
from bot.chat.scheduler import QuestionScheduler, ShuttingDownError
from bot.chat.service import ResearchService, Surface
from bot.chat.thread import ChatThread, answer_in_thread
from bot.chat.trace_view import TraceLine, shown_in, trace_lines
from bot.errors import EmptyQuestionError
from bot.metrics import ConferMetrics
from bot.telemetry import span
from graph import CollectionAccessError, PriorTurn, Question, Standalone, subject_of
from retrieval.audience import Audience

logger = logging.getLogger(__name__)

Outcome = Literal[
    "queued",  # the question is being answered in its thread
    "duplicate",  # a redelivery of a message already taken
    "not_ours",  # a reply in a thread Confer did not answer: not addressed to it
    "usage",  # empty, or ``help``: the adapter shows how to ask
    "listing",  # ``list``: ``Taken.text`` lists what the place may search (``refusal``: nothing)
    "refused",  # the place's policy: ``Taken.refusal`` says what it refused
    "already_asked",  # a suggested follow-up clicked again in the same thread
    "shutting_down",  # nothing new is taken; the adapter tells the asker
]


class ThreadHistory(Protocol):
    """What a platform can tell of a thread beyond Confer's memory."""

    async def posted(self) -> bool:
        """Whether Confer has a message in the thread (asked when its memory cannot be read)."""
        ...

    async def earlier(self) -> Sequence[PriorTurn]:
        """What was written in the thread before this message, as earlier turns (oldest first,
        ``origin="thread"``): the thread's first message and the last few, text only, an agent's
        reply as the answer of the message before it; ``[]`` when the thread cannot be read."""
        ...


@dataclass(frozen=True)
class Message:
    """A message a platform parsed, in the core's terms."""

    text: str  # as the person wrote it, without the mention of Confer
    place: str  # the channel or chat whose policy applies
    surface: Surface
    key: ThreadKey | None  # the thread it was asked in; ``None``: the thread is opened for it
    delivery: str | None = None  # the platform's delivery id: a redelivery is dropped
    commands: bool = False  # ``help`` and ``list`` are commands here (a slash command, Teams)
    followup_only: bool = False  # taken only in a thread Confer answered (a reply, not a mention)
    once: str | None = None  # asked once per thread whoever sends it (a suggested follow-up)
    shows_question: bool = False  # the status shows the question (a click nobody typed)
    history: ThreadHistory | None = None  # read when Confer has not answered in the thread
    fresh: bool = False  # researched anew, not answered from the cache ("Research again")
    user: str = ""  # the platform's id of who asked: only they open the answer's trace
    # Who asked (``bot.chat.audience``): the answer is for them, or for everyone in the channel;
    # ``None``: someone Confer cannot name, who reads only what everyone may read.
    asker: Asker | None = None


@dataclass(frozen=True)
class Delivery:
    """Where one question's answer goes: the platform's thread, opened when the question starts."""

    thread: ChatThread
    status_interval: float = 1.0
    key: ThreadKey | None = None  # the thread's key; used when the message had none (a new thread)
    on_undelivered: Callable[[], Awaitable[None]] | None = None  # nothing reached the thread
    privately: Callable[[str], Awaitable[None]] | None = None  # a sentence for the asker's eyes only


# Opens the thread a question is answered in (``None``: it could not, and told the asker).
Opener = Callable[[Question], AbstractAsyncContextManager[Delivery | None]]


@dataclass(frozen=True)
class Taken:
    outcome: Outcome
    text: str = ""  # ``listing``: the list, already safe for the platform
    refusal: CollectionAccessError | None = None


@dataclass(frozen=True)
class Voted:
    record: VoteRecord | None  # ``None``: not kept (the store is down), or a redelivery
    duplicate: bool = False
    explained: bool = False  # a reason came with the vote, and it was kept


def _log_refused_place(message: Message) -> None:
    """The id of a place the ``channels:`` section does not let use Confer, as that section spells
    it: how an operator finds a Slack channel's or a Teams conversation's id to add it."""
    logger.info(
        "refused: this place is not in the channels section",
        extra={"surface": message.surface, "place": message.place},
    )


@dataclass
class Intake:
    service: ResearchService
    scheduler: QuestionScheduler
    dedupe: EventDeduplicator
    metrics: ConferMetrics
    conversations: Conversations | None = None  # thread memory; ``None``: every question stands alone
    feedback: FeedbackDesk | None = None  # answers' records and votes

    @property
    def desk(self) -> FeedbackDesk:
        return self.feedback or FeedbackDesk(store=None, metrics=self.metrics)

    async def take(
        self, message: Message, opener: Opener, *, neutralize: Callable[[str], str] = str
    ) -> Taken:
        """What becomes of ``message``; when it is a question, it is queued to be answered in the
        thread ``opener`` opens. ``neutralize`` makes collection titles safe for the platform."""
        if message.followup_only and not await self.answered(message):
            return Taken("not_ours")
        if message.delivery and not await self.first(message.delivery):
            return Taken("duplicate")
        word = message.text.strip().lower()
        if message.commands and word in ("", "help"):
            return Taken("usage")
        if message.commands and word == "list":
            listing = self.listing(message.place, neutralize)
            if isinstance(listing, PlaceDeniedError):
                _log_refused_place(message)
                return Taken("listing", refusal=listing)
            return Taken("listing", text=listing)
        try:
            question = self.service.make_question(message.text, channel=message.place)
        except EmptyQuestionError:
            if not message.commands:
                self.service.record_rejected(message.surface)
            return Taken("usage")
        except CollectionAccessError as error:
            self.service.record_rejected(message.surface)
            if isinstance(error, PlaceDeniedError):
                _log_refused_place(message)
            return Taken("refused", refusal=error)
        if message.once and not await self.first(message.once):
            return Taken("already_asked")
        if not self.later(self._answer(message, question, opener), name=f"confer-{message.surface}"):
            return Taken("shutting_down")
        return Taken("queued")

    def later(self, work: Coroutine[Any, Any, None], *, name: str = "confer-reply") -> bool:
        """Run ``work`` in the background beside the questions (a reply, a thanks); ``False`` when
        Confer is shutting down and it will not run."""
        try:
            self.scheduler.submit(work, name=name)
        except ShuttingDownError:
            return False
        return True

    async def first(self, delivery: str) -> bool:
        """Whether ``delivery`` is seen for the first time (a redelivery is counted)."""
        if await self.dedupe.first_delivery(delivery):
            return True
        self.metrics.events_deduplicated.inc()
        return False

    async def answered(self, message: Message) -> bool:
        """Whether Confer answered in the message's thread: its memory says so, or, when the memory
        cannot be read (its database is down), the platform shows a message of Confer's there."""
        if self.conversations is None or message.key is None:
            return False
        turns = await self.conversations.remembered(message.key)
        if turns is not None:
            return bool(turns)
        return message.history is not None and await message.history.posted()

    def listing(self, place: str, neutralize: Callable[[str], str]) -> str | PlaceDeniedError:
        """The collections ``place`` may search, as text; the refusal where it may not use Confer."""
        config = self.service.config
        if policy_for(config, place) is None:
            return PlaceDeniedError(places=listed_places(config))
        entries = []
        for name in allowed_collections(config, place):
            collection = config.get(name)
            if collection is not None:
                entries.append(
                    (name, neutralize(collection_title(config, name)), neutralize(collection.description))
                )
        return messages.collections_list(entries)

    async def vote(
        self,
        answer_id: str,
        vote: Vote,
        *,
        place: Place,
        voter: str,
        delivery: str | None = None,
        reason: Reason | None = None,
        comment: str = "",
    ) -> Voted:
        """Keep a vote on an answer, with why when the platform sent ``reason`` along with it."""
        if delivery and not await self.first(delivery):
            return Voted(None, duplicate=True)
        record = await self.desk.vote(answer_id, vote, place=place, voter=voter)
        if vote == "down":  # the next identical question is researched again
            await self.service.forget(answer_id)
        explained = (
            record is not None and reason is not None and await self.desk.explain(record.id, reason, comment)
        )
        return Voted(record, explained=explained)

    async def explain(self, vote_id: str, reason: Reason, comment: str = "") -> bool:
        """Keep why a vote was down; whether it was kept."""
        return await self.desk.explain(vote_id, reason, comment)

    async def trace(self, question_id: str, *, place: str, platform: str, user: str) -> list[TraceLine] | str:
        """ "How I found this" for the answer ``question_id``, clicked by ``user`` in ``place``: the
        lines to show them privately when they asked the question, with only what ``place`` may
        search now (the place's policy may have changed since, or the answer was asked elsewhere).
        A sentence from ``bot.messages`` otherwise: only the asker opens it (anyone else is told
        so, and sees nothing of it), or it is no longer kept or cannot be read."""
        try:
            kept = await self.desk.trace(question_id)
        except FeedbackUnavailableError:
            return trace_messages.TRACE_NOT_KEPT
        if kept is None:
            return trace_messages.TRACE_GONE.format(days=f"{self.desk.trace_days:g}")
        if not kept.asked_by(question_id, platform, user):
            logger.info("a trace was asked for by someone other than its asker")
            return trace_messages.TRACE_ASKER_ONLY
        config = self.service.config
        self.metrics.traces_shown.inc()
        return trace_lines(shown_in(kept.trace, allowed_collections(config, place)), config)

    async def _answer(self, message: Message, question: Question, opener: Opener) -> None:
        """The question's life in its thread, kept in the thread's memory (the question as soon as
        it starts, then its answer): one OpenTelemetry trace, ``question``."""
        with span("question", **{"confer.surface": message.surface}):
            await self._answer_in_thread(message, question, opener)

    async def _answer_in_thread(self, message: Message, question: Question, opener: Opener) -> None:
        async with opener(question) as delivery:
            if delivery is None:  # the platform could not open a thread and told the asker
                return
            key = message.key or delivery.key
            with span("intake"):
                prepared = await self._prepare(message, question, key)
                # Who the answer is for: every search of the question reaches only what they may read.
                audience = await message.asker.audience() if message.asker is not None else Audience.anyone()
            question = question.model_copy(update={"audience": audience})
            if prepared is not None:
                prepared = replace(
                    prepared, question=prepared.question.model_copy(update={"audience": audience})
                )
            memory = (self.conversations, key, prepared) if self.conversations and key and prepared else None
            if memory is not None:
                conversations, thread, turn = memory
                await conversations.begin(thread, turn)
            searching = prepared.searching if prepared is not None else ""
            if message.shows_question:
                searching = searching or question.text
            answer = await answer_in_thread(
                delivery.thread,
                service=self.service,
                scheduler=self.scheduler,
                question=prepared.question if prepared is not None else question,
                surface=message.surface,
                status_interval=delivery.status_interval,
                on_undelivered=delivery.on_undelivered,
                searching=searching,
                key=key,
                feedback=self.feedback,
                fresh=message.fresh or (prepared is not None and prepared.fresh),
                asker=message.user,
            )
            if memory is not None:
                await conversations.remember(thread, turn, answer)
            if answer is not None and message.asker is not None and not message.asker.private:
                asked = prepared.question if prepared is not None else question
                await self._tell_if_restricted(message.asker, asked, delivery)

    async def _tell_if_restricted(self, asker: Asker, question: Question, delivery: Delivery) -> None:
        """In a channel: when passages only some of the people there may read would have been among
        the asker's best matches, the asker alone is told they can ask in a direct message."""
        if delivery.privately is None:
            return
        try:
            if await restricted_matches(self.service, question, await asker.alone()):
                await delivery.privately(messages.RESTRICTED_ELSEWHERE)
        except Exception:  # an extra after the answer: never the answer's failure
            logger.exception("could not check for passages only some people here may read")

    async def _prepare(self, message: Message, question: Question, key: ThreadKey | None) -> Prepared | None:
        """The question read with its thread: a follow-up made standalone, earlier collections
        carried. ``None`` without thread memory."""
        if self.conversations is None or key is None:
            return None
        if message.key is None:  # a thread opened for this question: nothing earlier to read
            standalone = Standalone(question.text, subject_of(question.text), "as_asked")
            return Prepared(question, standalone, question.text, False)
        try:
            context: Sequence[PriorTurn] = ()
            # A reply was taken because Confer answered there; a mention reads the thread unless it did.
            if message.history is not None and not message.followup_only and not await self.answered(message):
                context = await message.history.earlier()
            return await self.conversations.prepare(
                self.service, key, message.text, channel=message.place, context=context
            )
        except (EmptyQuestionError, CollectionAccessError):
            return None  # checked before it was queued; the question stands as asked
        except Exception:  # the thread's memory or the rewrite failed: never the answer
            logger.exception("could not read the question with its thread; answering it as asked")
            return None
