"""Running the graph for one question and streaming its progress to a caller."""

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from graph.builder import ResearchGraph
from graph.context import GraphContext, ModelWork
from graph.events import AnswerReady, ProgressEvent
from graph.llm.port import QuestionModel
from graph.models import Question
from graph.spans import trace_id
from graph.state import ResearchState
from graph.trace import TraceRecorder, recording, trace_of
from retrieval.backends import AudienceBackend

RECURSION_LIMIT = 25


async def stream_research(
    graph: ResearchGraph,
    question: Question,
    context: GraphContext,
    *,
    sequential: bool = False,
) -> AsyncIterator[ProgressEvent]:
    """Yield progress events as they happen; the last one is ``AnswerReady``.

    ``sequential`` runs one branch at a time (for benchmarks that contrast it with fan-out).
    """
    started = time.monotonic()
    if context.llm is not None and not isinstance(context.llm, QuestionModel):
        # This question's view of the model: its stages end by the model deadline, and a model that
        # stalled or refused is not asked again in this question.
        deadline = started + context.limits.model_deadline
        if context.deadline is not None:
            deadline = min(deadline, context.deadline)
        context = replace(context, llm=QuestionModel(context.llm, deadline=deadline), work=ModelWork())
    context = replace(context, trace=TraceRecorder(started=started))  # this question's own
    if not question.audience.unrestricted:
        # Every search and probe of this question, whichever node makes it, is for its audience.
        context = replace(context, backend=AudienceBackend(context.backend, question.audience))
    config: RunnableConfig = {"recursion_limit": RECURSION_LIMIT}
    if sequential:
        config["max_concurrency"] = 1
    final: dict[str, Any] = {}
    state: ResearchState = {"question": question}
    try:
        with recording(context.trace):
            async for mode, chunk in graph.astream(
                state, config=config, context=context, stream_mode=["custom", "values"]
            ):
                if mode == "custom":
                    yield cast(ProgressEvent, chunk)
                elif mode == "values":
                    final = cast(dict[str, Any], chunk)
    finally:
        if context.work is not None:
            context.work.cancel()  # model calls the answer no longer waits for
    answer = final["answer"]
    trace = trace_of(context.trace, question, final.get("plan"), final.get("rounds", ()), answer)
    trace = trace.model_copy(update={"trace_id": trace_id()})  # the OpenTelemetry trace, when exported
    answer = answer.model_copy(update={"trace": trace})
    yield AnswerReady(answer=answer, seconds=round(time.monotonic() - started, 4))
