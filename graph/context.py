"""Runtime dependencies of the graph: they travel in LangGraph's context, never in state."""

import time
from dataclasses import dataclass, field

from graph.llm import ChatModel
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


@dataclass(frozen=True)
class GraphContext:
    backend: SearchBackend
    collections: dict[str, Collection]
    limits: ResearchLimits = field(default_factory=ResearchLimits)
    llm: ChatModel | None = None
    deadline: float | None = None  # time.monotonic() by which the whole question must be answered

    def budget(self, limit: float, *, reserve: float = 0.0) -> float:
        """``limit`` seconds, or less if the question's deadline (minus ``reserve``) comes first."""
        if self.deadline is None:
            return limit
        return max(0.0, min(limit, self.deadline - time.monotonic() - reserve))
