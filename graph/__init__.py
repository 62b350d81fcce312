"""The research graph: plan → research (one Send branch per collection) → synthesize.

This module is the graph's public face: ``bot/`` imports only the names listed in ``__all__``
(an import-direction test holds it to that). Inside, ``research/`` decides what to search,
``llm/`` talks to the model, ``verify/`` checks sentences and ``answer/`` writes them.

The names load on first use (PEP 562), so that a command that needs one value type does not load
LangGraph and every node. Imports ``retrieval`` and LangGraph; never a chat SDK. No
``from __future__ import annotations`` here: LangGraph injects ``runtime`` by annotation.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.answer.judge import BEST_FEW, FEATURES, JUDGE_FILE, MEANING_FEATURES, question_signals
    from graph.answer.suggestions import Suggestion, suggest_followups
    from graph.builder import ResearchGraph, build_research_graph
    from graph.context import GraphContext, ResearchLimits
    from graph.events import (
        AnswerReady,
        BranchFinished,
        BranchStarted,
        FollowUp,
        LLMFallback,
        PlanReady,
        ProgressEvent,
        SentenceVerified,
    )
    from graph.llm.openai_client import build_chat_model
    from graph.llm.port import ChatModel, LLMObserver, LocalBreaker, ModelBreaker
    from graph.models import (
        Answer,
        AnswerSentence,
        Derived,
        FindingStatus,
        Judgement,
        Question,
        QuestionKind,
        ResearchRound,
    )
    from graph.research.followup import PriorTurn, Standalone, subject_of, understand_followup
    from graph.research.planning import CollectionAccessError, check_requested
    from graph.research.question import comparison_sides, extract_targets
    from graph.runner import stream_research
    from graph.store import postgres_store, process_store, sqlite_store
    from graph.trace import AnswerTrace
    from graph.verify.citations import is_supported

# Each public name and the module that defines it.
_HOMES = {
    "BEST_FEW": "graph.answer.judge",
    "FEATURES": "graph.answer.judge",
    "JUDGE_FILE": "graph.answer.judge",
    "MEANING_FEATURES": "graph.answer.judge",
    "question_signals": "graph.answer.judge",
    "Judgement": "graph.models",
    "Suggestion": "graph.answer.suggestions",
    "suggest_followups": "graph.answer.suggestions",
    "ResearchGraph": "graph.builder",
    "build_research_graph": "graph.builder",
    "GraphContext": "graph.context",
    "ResearchLimits": "graph.context",
    "AnswerReady": "graph.events",
    "BranchFinished": "graph.events",
    "BranchStarted": "graph.events",
    "FollowUp": "graph.events",
    "LLMFallback": "graph.events",
    "PlanReady": "graph.events",
    "ProgressEvent": "graph.events",
    "SentenceVerified": "graph.events",
    "build_chat_model": "graph.llm.openai_client",
    "ChatModel": "graph.llm.port",
    "LLMObserver": "graph.llm.port",
    "LocalBreaker": "graph.llm.port",
    "ModelBreaker": "graph.llm.port",
    "Answer": "graph.models",
    "Derived": "graph.models",
    "AnswerSentence": "graph.models",
    "FindingStatus": "graph.models",
    "Question": "graph.models",
    "QuestionKind": "graph.models",
    "ResearchRound": "graph.models",
    "PriorTurn": "graph.research.followup",
    "Standalone": "graph.research.followup",
    "subject_of": "graph.research.followup",
    "understand_followup": "graph.research.followup",
    "CollectionAccessError": "graph.research.planning",
    "check_requested": "graph.research.planning",
    "comparison_sides": "graph.research.question",
    "extract_targets": "graph.research.question",
    "stream_research": "graph.runner",
    "postgres_store": "graph.store",
    "process_store": "graph.store",
    "sqlite_store": "graph.store",
    "AnswerTrace": "graph.trace",
    "is_supported": "graph.verify.citations",
}

__all__ = [
    "BEST_FEW",
    "FEATURES",
    "JUDGE_FILE",
    "MEANING_FEATURES",
    "Answer",
    "AnswerReady",
    "AnswerSentence",
    "AnswerTrace",
    "BranchFinished",
    "BranchStarted",
    "ChatModel",
    "CollectionAccessError",
    "Derived",
    "FindingStatus",
    "FollowUp",
    "GraphContext",
    "Judgement",
    "LLMFallback",
    "LLMObserver",
    "LocalBreaker",
    "ModelBreaker",
    "PlanReady",
    "PriorTurn",
    "ProgressEvent",
    "Question",
    "QuestionKind",
    "ResearchGraph",
    "ResearchLimits",
    "ResearchRound",
    "SentenceVerified",
    "Standalone",
    "Suggestion",
    "build_chat_model",
    "build_research_graph",
    "check_requested",
    "comparison_sides",
    "extract_targets",
    "is_supported",
    "postgres_store",
    "process_store",
    "question_signals",
    "sqlite_store",
    "stream_research",
    "subject_of",
    "suggest_followups",
    "understand_followup",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value
