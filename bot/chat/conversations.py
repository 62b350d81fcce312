"""Conversations: a question asked in a thread is read with the thread's earlier turns.

``Conversations`` is the platform-neutral step around ``ResearchService``: it reads the thread's
memory, turns a follow-up into a standalone question (``graph.research.followup``), carries the collections
an earlier turn named (those the place still allows: the channel's policy at the time of the
follow-up applies), and after the answer remembers the turn. Memory failures never fail a
question: it is answered without memory, the failure logged and counted.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.chat.access import require_policy
from bot.chat.cache import normalise
from bot.chat.memory import MemoryUnavailableError, ThreadKey, ThreadMemory, Turn
from bot.chat.service import ResearchService
from bot.metrics import ConferMetrics
from graph import Answer, PriorTurn, Question, Standalone, extract_targets, understand_followup
from retrieval.text import repair_encoding

logger = logging.getLogger(__name__)

AGAIN = frozenset({"again", "research again", "ask again", "try again"})  # as ``normalise`` reads them


@dataclass(frozen=True)
class Prepared:
    """A question ready to research, with what it was understood as."""

    question: Question
    standalone: Standalone
    asked: str
    followup: bool  # whether earlier turns were used
    fresh: bool = False  # "again": the thread's last question, researched anew (not from the cache)

    @property
    def searching(self) -> str:
        """The standalone question when a follow-up was rewritten (for the status), else ``""``."""
        return self.question.text if self.followup and self.standalone.how != "as_asked" else ""


def answer_text(answer: Answer) -> str:
    return " ".join(s.text for section in answer.sections for s in section.sentences)


@dataclass
class Conversations:
    memory: ThreadMemory | None
    metrics: ConferMetrics

    async def history(self, key: ThreadKey) -> list[Turn]:
        """The thread's turns; ``[]`` when there are none or memory cannot be read."""
        return await self.remembered(key) or []

    async def remembered(self, key: ThreadKey) -> list[Turn] | None:
        """The thread's turns (``[]``: none, or no memory at all); ``None`` when memory cannot be
        read now, so the caller can tell "never answered here" from "cannot say"."""
        if self.memory is None:
            return []
        try:
            return await self.memory.turns(key)
        except MemoryUnavailableError as exc:
            self._unavailable("read", exc)
            return None

    async def prepare(
        self,
        service: ResearchService,
        key: ThreadKey | None,
        text: str,
        *,
        channel: str | None = None,
        extra_targets: Sequence[str] = (),
        context: Sequence[PriorTurn] = (),
    ) -> Prepared:
        """The question for ``text`` in thread ``key``: standalone, with carried collections.

        ``context`` adds turns read from the platform (a thread's messages before Confer was asked
        there, ``origin="thread"``: a follow-up builds on the thread's first) before the remembered
        ones. Raises what ``ResearchService.make_question`` raises."""
        turns = await self.history(key) if key is not None else []
        asked, named = extract_targets(repair_encoding(text))
        prior = [*context, *(PriorTurn(t.question, t.subject, t.answer) for t in turns)]
        if not prior or not asked.strip():
            question = service.make_question(text, channel=channel, extra_targets=extra_targets)
            return Prepared(question, Standalone(question.text, "", "as_asked"), question.text, False)
        if normalise(asked) in AGAIN and turns:
            # "again": the last question as it was researched, with its collections, anew.
            last = turns[-1]
            question = service.make_question(last.question, channel=channel, extra_targets=last.collections)
            question = question.model_copy(update={"asked": asked})
            return Prepared(
                question, Standalone(last.question, last.subject, "as_asked"), asked, True, fresh=True
            )
        standalone = await understand_followup(asked, prior, llm=service.llm)
        if standalone.fallback_reason:
            self.metrics.llm_fallbacks.labels("followup").inc()
            logger.warning("model not used for the follow-up rewrite; fell back", extra={"stage": "followup"})
        carried: tuple[str, ...] = ()
        if not named and not extra_targets and turns:
            allowed = require_policy(service.config, channel).allow
            carried = tuple(c for c in turns[-1].collections if c in allowed)
        question = service.make_question(
            standalone.text, channel=channel, extra_targets=[*extra_targets, *named, *carried]
        )
        question = question.model_copy(update={"asked": asked})  # the trace shows both
        logger.debug("follow-up rewritten", extra={"asked": asked, "standalone": standalone.text})
        return Prepared(question, standalone, asked, True)

    async def begin(self, key: ThreadKey, prepared: Prepared) -> None:
        """Keep the question as soon as it is accepted: the thread is Confer's from now on, and a
        reply that comes while it is researched is already a follow-up."""
        await self._write(key, self._turn(prepared, None), replace_last=False)

    async def remember(self, key: ThreadKey, prepared: Prepared, answer: Answer | None) -> None:
        """Keep the turn with its answer (replacing the one ``begin`` kept, if it is the last)."""
        if self.memory is None:
            return
        turns = await self.history(key)
        begun = bool(turns) and turns[-1] == self._turn(prepared, None)
        if answer is not None or not begun:
            await self._write(key, self._turn(prepared, answer), replace_last=begun)

    @staticmethod
    def _turn(prepared: Prepared, answer: Answer | None) -> Turn:
        return Turn(
            asked=prepared.asked,
            question=prepared.question.text,
            subject=prepared.standalone.subject,
            collections=prepared.question.requested,
            answer=answer_text(answer) if answer is not None else "",
            passage_ids=tuple(dict.fromkeys(c.passage.id for c in answer.citations)) if answer else (),
        )

    async def _write(self, key: ThreadKey, turn: Turn, *, replace_last: bool) -> None:
        if self.memory is None:
            return
        try:
            await self.memory.remember(key, turn, replace_last=replace_last)
        except MemoryUnavailableError as exc:
            self._unavailable("write", exc)

    async def forget(self, key: ThreadKey) -> None:
        if self.memory is None:
            return
        try:
            await self.memory.forget(key)
        except MemoryUnavailableError as exc:
            self._unavailable("forget", exc)

    def _unavailable(self, operation: str, exc: MemoryUnavailableError) -> None:
        self.metrics.memory_unavailable.labels(operation).inc()
        logger.warning(
            "thread memory unavailable; answering without it: %s", exc, extra={"operation": operation}
        )
