"""Runtime dependencies of the graph: they travel in LangGraph's context, never in state."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from graph.llm.port import ChatModel
from graph.trace import TraceRecorder
from retrieval.backends import SearchBackend
from retrieval.collections import Collection


@dataclass(frozen=True)
class ResearchLimits:
    top_k: int = 8
    max_fanout: int = 8
    branch_timeout: float = 20.0
    routing_ratio: float = 0.5
    claims_per_branch: int = 3
    answer_sentences: int = 6
    plan_timeout: float = 10.0
    synthesis_timeout: float = 20.0
    max_rounds: int = 2  # research rounds per question: the plan's, then follow-ups
    follow_ups: int = 3  # follow-up branches per round at most
    # With a model: every model stage ends this many seconds after the question began (then the
    # verified answer so far goes out); a draft gets at most ``draft_timeout`` (less than its
    # branch), and only the ``drafted_branches`` best-ranked branches of the plan are drafted.
    model_deadline: float = 8.0
    draft_timeout: float = 4.0
    drafted_branches: int = 3


@dataclass
class ModelWork:
    """One question's model calls running beside its research (asyncio tasks cannot travel in
    checkpointed state): the model's plan and its follow-up proposals, each joined to the round it
    belongs to by ``join_model`` when it arrives before that round's branches have all finished."""

    plan: "asyncio.Task[Any] | None" = None
    follow_ups: "asyncio.Task[Any] | None" = None
    base: dict[int, Any] = field(default_factory=dict)  # what each round sent without the model
    _running: dict[int, int] = field(default_factory=dict)
    _done: dict[int, asyncio.Event] = field(default_factory=dict)
    _found: set[int] = field(default_factory=set)  # rounds in which some branch found passages

    def expect(self, round_: int, branches: int) -> None:
        self._running[round_] = branches
        self._done.setdefault(round_, asyncio.Event())

    def finished(self, round_: int, *, found: bool = False) -> None:
        if found:
            self._found.add(round_)
        left = self._running.get(round_, 0) - 1
        self._running[round_] = left
        if left <= 0:
            self._done.setdefault(round_, asyncio.Event()).set()

    async def round_done(self, round_: int) -> None:
        """Until every research branch of the round has finished."""
        await self._done.setdefault(round_, asyncio.Event()).wait()

    def found(self, round_: int) -> bool:
        return round_ in self._found

    def cancel(self) -> None:
        for task in (self.plan, self.follow_ups):
            if task is not None:
                task.cancel()


@dataclass(frozen=True)
class GraphContext:
    backend: SearchBackend
    collections: dict[str, Collection]
    limits: ResearchLimits = field(default_factory=ResearchLimits)
    llm: ChatModel | None = None
    deadline: float | None = None  # time.monotonic() by which the whole question must be answered
    work: ModelWork | None = None  # with a model: its calls running beside the research (per run)
    trace: TraceRecorder = field(default_factory=TraceRecorder)  # what the run found (per run)

    def budget(self, limit: float, *, reserve: float = 0.0) -> float:
        """``limit`` seconds, or less if the question's deadline (minus ``reserve``) comes first."""
        if self.deadline is None:
            return limit
        return max(0.0, min(limit, self.deadline - time.monotonic() - reserve))
