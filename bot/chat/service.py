"""The platform-neutral question service: the CLI and every chat surface go through it.

It turns text into a ``Question`` under the place's collection policy, runs the research graph,
forwards progress events, enforces the question's time budget and records metrics.
"""

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from bot import messages
from bot.chat.access import require_policy
from bot.chat.cache import AnswerCache, CachedAnswer, cache_key
from bot.errors import EmptyQuestionError as EmptyQuestionError  # importers of bot.chat.service keep it
from bot.metrics import ConferMetrics, record_drops
from bot.telemetry import span
from graph import (
    Answer,
    AnswerReady,
    BranchFinished,
    ChatModel,
    CollectionAccessError,
    GraphContext,
    LLMFallback,
    ProgressEvent,
    Question,
    ResearchGraph,
    ResearchLimits,
    Suggestion,
    build_research_graph,
    check_requested,
    extract_targets,
    stream_research,
    suggest_followups,
)
from retrieval.audience import Audience
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.collections import Collection, CollectionsConfig
from retrieval.errors import ConferError
from retrieval.passages import Passage
from retrieval.text import repair_encoding

logger = logging.getLogger(__name__)

Surface = Literal["mention", "command", "cli", "teams", "followup", "dm"]
EventHandler = Callable[[ProgressEvent], Awaitable[None]]


class QuestionTimeoutError(ConferError):
    """The whole question ran past its time budget."""


class InstrumentedBackend(DelegatingBackend):
    """A ``SearchBackend`` that records search latency; everything else passes through."""

    def __init__(self, inner: SearchBackend, metrics: ConferMetrics) -> None:
        super().__init__(inner)
        self._histogram = metrics.retrieval_duration.labels(backend=inner.name)

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
        audience: Audience | None = None,
    ) -> list[Passage]:
        started = time.perf_counter()
        with span(
            "search", **{"confer.backend": self.inner.name, "confer.collection": collection.name}
        ) as current:
            try:
                found = await super().search(
                    collection,
                    query,
                    limit=limit,
                    broad=broad,
                    meaning=meaning,
                    corpus=corpus,
                    audience=audience,
                )
                current.set_attribute("confer.hits", len(found))
                return found
            finally:
                self._histogram.observe(time.perf_counter() - started)

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        started = time.perf_counter()
        with span("search", **{"confer.backend": self.inner.name, "confer.collection": "*probe*"}) as current:
            try:
                scores = await super().probe(collections, query, meaning=meaning, audience=audience)
                current.set_attribute("confer.hits", len(scores))
                return scores
            finally:
                self._histogram.observe(time.perf_counter() - started)


@dataclass
class ResearchService:
    config: CollectionsConfig
    backend: SearchBackend
    metrics: ConferMetrics
    limits: ResearchLimits
    question_timeout: float
    llm: ChatModel | None = None
    # Seconds after ``question_timeout`` a chat may still retry to show the answer or its failure.
    delivery_timeout: float = 30.0
    graph: ResearchGraph | None = None
    cache: AnswerCache | None = None  # the answer cache (``bot.chat.cache``); ``None``: off
    model: str = ""  # the model's name, part of the cache key ("" without one)

    def __post_init__(self) -> None:
        self.graph = self.graph or build_research_graph()
        self.context = GraphContext(
            backend=InstrumentedBackend(self.backend, self.metrics),
            collections={c.name: c for c in self.config.collections},
            limits=self.limits,
            llm=self.llm,
        )

    def make_question(
        self,
        text: str,
        *,
        channel: str | None = None,
        extra_targets: Sequence[str] = (),
        audience: Audience | None = None,
    ) -> Question:
        """Parse ``in:`` targets and apply the channel's policy (``bot.chat.access``). Raises
        ``EmptyQuestionError``, or ``CollectionAccessError`` (``PlaceDeniedError`` where Confer may
        not be used at all) before anything is searched. ``audience``: who the answer is for
        (``bot.chat.audience``); by default the operator where there is no place (the terminal, an
        evaluation), else only what everyone may read until the chat names its people."""
        remaining, targets = extract_targets(repair_encoding(text))
        if not remaining.strip():
            raise EmptyQuestionError("empty question")
        policy = require_policy(self.config, channel)
        question = Question(
            text=remaining,
            allowed=policy.allow,
            requested=tuple(dict.fromkeys([*extra_targets, *targets])),
            defaults=policy.default,
            audience=audience or (Audience.everything() if channel is None else Audience.anyone()),
        )
        check_requested(question, self.context.collections)
        return question

    async def answer(
        self,
        question: Question,
        *,
        surface: Surface,
        on_event: EventHandler | None = None,
        sequential: bool = False,
        fresh: bool = False,
    ) -> Answer:
        """The cached answer when one was kept for this question and place and its collections are
        unchanged (``fresh``: research it anyway, and keep the new answer); otherwise research and
        answer, progress going to ``on_event`` as it happens. In the span ``research``."""
        with span("research", **{"confer.surface": surface, "confer.fresh": fresh}):
            return await self._answer(
                question, surface=surface, on_event=on_event, sequential=sequential, fresh=fresh
            )

    async def _answer(
        self,
        question: Question,
        *,
        surface: Surface,
        on_event: EventHandler | None,
        sequential: bool,
        fresh: bool,
    ) -> Answer:
        if self.cache is None:
            return await self._research(question, surface=surface, on_event=on_event, sequential=sequential)
        key = cache_key(question, mode="llm" if self.llm is not None else "extractive", model=self.model)
        if not fresh:
            started = time.perf_counter()
            cached = await self._cached(key)
            if cached is not None:
                seconds = time.perf_counter() - started
                self.metrics.questions.labels(surface, "answered").inc()
                self.metrics.question_duration.labels(surface).observe(seconds)
                logger.info(
                    "question finished",
                    extra={
                        "surface": surface,
                        "outcome": "answered",
                        "cached": True,
                        "seconds": round(seconds, 4),
                    },
                )
                if on_event is not None:
                    await on_event(AnswerReady(answer=cached, seconds=round(seconds, 4)))
                return cached
        before = await self._generations(question.allowed)
        answer = await self._research(question, surface=surface, on_event=on_event, sequential=sequential)
        if before is not None and answer.mode != "direct" and not answer.partial:
            searched = answer.trace.collections if answer.trace is not None else ()
            used = {
                name: before.get(name, "")
                for name in dict.fromkeys([*searched, *(o.name for o in answer.outcomes)])
            }
            answer = answer.model_copy(update={"cache_key": key})
            await self.cache.put(key, CachedAnswer(answer=answer, generations=used, created=time.time()))
        return answer

    async def _cached(self, key: str) -> Answer | None:
        """The kept answer while every collection it searched is at the generation it was
        answered from; a changed one evicts it (counted)."""
        assert self.cache is not None
        entry = await self.cache.get(key)
        if entry is None:
            self.metrics.answer_cache.labels("miss").inc()
            return None
        current = await self._generations(tuple(entry.generations))
        if current is None or any(current.get(n, "") != g for n, g in entry.generations.items()):
            self.metrics.answer_cache.labels("miss").inc()
            if current is not None:  # the index changed under it: researched again, and replaced
                await self.cache.evict(key)
                self.metrics.answer_cache_evictions.labels("index").inc()
            return None
        self.metrics.answer_cache.labels("hit").inc()
        return entry.answer.model_copy(update={"cached_at": entry.created})

    async def _generations(self, names: Sequence[str]) -> dict[str, str] | None:
        """The index generations of these collections; ``None`` when they cannot be read (the
        answer is then neither served from the cache nor kept in it)."""
        collections = [self.context.collections[n] for n in names if n in self.context.collections]
        try:
            return await self.backend.generations(collections)
        except ConferError as exc:
            logger.warning("index generations unavailable; answering uncached: %s", exc)
            return None

    async def forget(self, question_id: str) -> bool:
        """A 👎 on a posted answer: the cached answer it came from or went to is evicted, so the
        next identical question is researched again. Whether one was."""
        if self.cache is None:
            return False
        key = await self.cache.key_of(question_id)
        if key is None or not await self.cache.evict(key):
            return False
        self.metrics.answer_cache_evictions.labels("vote").inc()
        return True

    async def remember_posted(self, question_id: str, answer: Answer) -> None:
        """A posted answer's question id, linked to the cache entry it is kept under (if any)."""
        if self.cache is not None and answer.cache_key:
            await self.cache.link(question_id, answer.cache_key)

    async def _research(
        self,
        question: Question,
        *,
        surface: Surface,
        on_event: EventHandler | None = None,
        sequential: bool = False,
    ) -> Answer:
        """Research and answer; progress goes to ``on_event`` as it happens."""
        assert self.graph is not None
        question_id = uuid.uuid4().hex[:12]
        started = time.perf_counter()
        self.metrics.questions_in_flight.inc()
        outcome = "failed"
        logged: Literal["", "not_found"] = ""  # the log says more than the metric: not found
        # Nodes plan their own budgets against this deadline, a little before the hard stop below.
        context = replace(self.context, deadline=time.monotonic() + self.question_timeout * 0.95)
        try:
            async with asyncio.timeout(self.question_timeout):
                answer = None
                async for event in stream_research(self.graph, question, context, sequential=sequential):
                    if isinstance(event, BranchFinished):
                        logger.info(
                            "branch finished",
                            extra={
                                "question_id": question_id,
                                "collection": event.collection,
                                "outcome": event.status,
                                "sources": event.sources,
                                "seconds": event.seconds,
                            },
                        )
                        self.metrics.subagents.labels(event.collection, event.status).inc()
                        self.metrics.subagent_duration.labels(event.collection, event.status).observe(
                            event.seconds
                        )
                    if isinstance(event, LLMFallback):
                        self.metrics.llm_fallbacks.labels(event.stage).inc()
                        if event.reason == "deadline":
                            self.metrics.llm_skipped.labels("deadline").inc()
                        logger.warning(
                            "model not used for %s; fell back",
                            event.stage,
                            extra={
                                "question_id": question_id,
                                "stage": event.stage,
                                "reason": event.reason,
                                "collection": event.collection,
                            },
                        )
                    if isinstance(event, AnswerReady):
                        answer = messages.worded(event.answer)  # the graph's derived sentences in words
                        event = event.model_copy(update={"answer": answer})
                        record_drops(self.metrics, answer)
                    if on_event is not None:
                        await on_event(event)
            assert answer is not None
            outcome = "partial" if answer.partial else "answered"
            if answer.outcomes and all(o.status in ("failed", "timeout") for o in answer.outcomes):
                outcome = "failed"
            elif not answer.found and answer.mode != "direct":
                logged = "not_found"  # searched, and nothing answers it (the metric counts it answered)
            return answer
        except TimeoutError:
            raise QuestionTimeoutError("question time budget exceeded") from None
        except CollectionAccessError:
            outcome = "rejected"
            raise
        finally:
            seconds = time.perf_counter() - started
            self.metrics.questions_in_flight.dec()
            self.metrics.questions.labels(surface, outcome).inc()
            self.metrics.question_duration.labels(surface).observe(seconds)
            logger.info(
                "question finished",
                extra={
                    "question_id": question_id,
                    "surface": surface,
                    "outcome": logged or outcome,
                    "seconds": round(seconds, 4),
                },
            )
            logger.debug("question text", extra={"question_id": question_id, "text": question.text})

    async def suggest(self, question: Question, answer: Answer) -> tuple[Suggestion, ...]:
        """Up to three follow-ups the answer leaves open (``graph.answer.suggestions``): the model's when one
        is configured, else (or when it fails) the heuristic's."""
        suggestions = await suggest_followups(question.text, answer, llm=self.llm)
        if suggestions.fallback_reason:
            self.metrics.llm_fallbacks.labels("suggest").inc()
            logger.warning(
                "model not used for suggestions; fell back",
                extra={"stage": "suggest", "reason": suggestions.fallback_reason},
            )
        return tuple(messages.suggestion_question(s) for s in suggestions.items)

    async def close(self) -> None:
        await self.backend.close()
        if self.cache is not None:
            await self.cache.close()
        if self.llm is not None:
            await self.llm.close()

    def record_rejected(self, surface: Surface) -> None:
        self.metrics.questions.labels(surface, "rejected").inc()
