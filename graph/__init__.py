"""The research graph: plan → research (one Send branch per collection) → synthesize.

This module is the graph's public face: ``bot/`` imports only the names listed in ``__all__``
(an import-direction test holds it to that). Inside, ``research/`` decides what to search,
``llm/`` talks to the model, ``verify/`` checks sentences and ``answer/`` writes them.

Imports ``retrieval`` and LangGraph; never a chat SDK. No ``from __future__ import annotations``
here: LangGraph injects ``runtime`` by annotation.
"""

from typing import TYPE_CHECKING

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
from graph.llm.port import ChatModel, LLMObserver, LocalBreaker, ModelBreaker
from graph.models import Answer, AnswerSentence, FindingStatus, Question, QuestionKind, ResearchRound
from graph.research.followup import PriorTurn, Standalone, subject_of, understand_followup
from graph.research.planning import CollectionAccessError, check_requested
from graph.research.question import comparison_sides, extract_targets
from graph.runner import stream_research
from graph.verify.citations import is_supported

if TYPE_CHECKING:
    from graph.llm.openai_client import OpenAIChatModel


def build_chat_model(
    *,
    base_url: str | None,
    api_key: str | None,
    model: str,
    observer: LLMObserver | None = None,
    breaker: ModelBreaker | None = None,
    request_timeout: float = 60.0,
    stall_seconds: float = 5.0,
    cooldown: float = 30.0,
) -> "OpenAIChatModel":
    """The ``ChatModel`` for an OpenAI-compatible endpoint (``graph.llm.openai_client``); the
    ``openai`` package, most of a second to import, loads only when a model is configured."""
    from graph.llm.openai_client import build_chat_model as build

    return build(
        base_url=base_url,
        api_key=api_key,
        model=model,
        observer=observer,
        breaker=breaker,
        request_timeout=request_timeout,
        stall_seconds=stall_seconds,
        cooldown=cooldown,
    )


__all__ = [
    "Answer",
    "AnswerReady",
    "AnswerSentence",
    "BranchFinished",
    "BranchStarted",
    "ChatModel",
    "CollectionAccessError",
    "FindingStatus",
    "FollowUp",
    "GraphContext",
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
    "stream_research",
    "subject_of",
    "suggest_followups",
    "understand_followup",
]
