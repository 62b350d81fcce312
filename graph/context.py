"""Runtime dependencies of the graph: they travel in LangGraph's context, never in state."""

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


@dataclass(frozen=True)
class GraphContext:
    backend: SearchBackend
    collections: dict[str, Collection]
    limits: ResearchLimits = field(default_factory=ResearchLimits)
    llm: ChatModel | None = None
