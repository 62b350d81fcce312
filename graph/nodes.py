"""Graph nodes. Each returns a state update and reports progress on the custom stream."""

import asyncio
import logging
import time
from collections.abc import Sequence

from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.context import GraphContext
from graph.events import BranchFinished, BranchStarted, PlanReady
from graph.extractive import draft_claims
from graph.llm import LLMError
from graph.models import Answer, Finding, Plan, ResearchTask
from graph.planning import allowed_names, check_requested, plan_research
from graph.question import classify_question
from graph.state import ResearchState
from graph.synthesis import synthesize_extractive
from retrieval.errors import CollectionNotIndexedError, RetrievalError
from retrieval.passages import Passage

logger = logging.getLogger(__name__)

DIRECT_KINDS = ("greeting", "thanks", "help")


async def plan(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, Plan]:
    """Classify the question, choose collections (one routing probe if needed), write tasks."""
    context = runtime.context
    question = state["question"]
    kind = classify_question(question.text)
    if kind in DIRECT_KINDS:
        return {"plan": Plan(kind=kind, routing="all", tasks=())}
    check_requested(question, context.collections)
    scores: dict[str, float] = {}
    if not question.requested and not question.defaults:
        allowed = [context.collections[n] for n in allowed_names(question, context.collections)]
        scores = await context.backend.probe(allowed, question.text)
    result = plan_research(question, kind, context.collections, scores, context.limits)
    runtime.stream_writer(
        PlanReady(
            kind=result.kind,
            routing=result.routing,
            collections=tuple(t.collection for t in result.tasks),
        )
    )
    return {"plan": result}


def dispatch(state: ResearchState) -> list[Send] | str:
    """One ``Send`` per research task; questions that need no search go straight to an answer."""
    tasks = state["plan"].tasks
    if not tasks:
        return "respond_directly"
    return [Send("research", task) for task in tasks]


async def _gather(context: GraphContext, task: ResearchTask, *, broad: bool) -> list[Passage]:
    collection = context.collections[task.collection]
    queries = task.queries if not broad else task.queries[:1]
    results = await asyncio.gather(
        *(context.backend.search(collection, q, limit=context.limits.top_k, broad=broad) for q in queries)
    )
    best: dict[str, Passage] = {}
    for passages in results:
        for passage in passages:
            if passage.id not in best or passage.score > best[passage.id].score:
                best[passage.id] = passage
    ranked = sorted(best.values(), key=lambda p: -p.score)
    return ranked[: context.limits.top_k]


async def investigate(context: GraphContext, task: ResearchTask) -> Finding:
    """Retrieve, broaden once if nothing came back, then draft claims."""
    passages = await _gather(context, task, broad=False)
    if not passages:
        passages = await _gather(context, task, broad=True)
    if not passages:
        return Finding(collection=task.collection, status="empty")
    claims = draft_claims(" ".join(task.queries), passages, limit=context.limits.claims_per_branch)
    return Finding(collection=task.collection, status="ok", passages=tuple(passages), claims=tuple(claims))


async def research(state: ResearchTask, runtime: Runtime[GraphContext]) -> dict[str, list[Finding]]:
    """One sub-agent; its input is the ``ResearchTask`` it was sent. Its failure or timeout becomes
    a ``Finding`` that says so; it never raises for a backend or model problem, so one bad
    collection cannot sink the answer."""
    task = state
    context = runtime.context
    runtime.stream_writer(BranchStarted(collection=task.collection))
    started = time.monotonic()
    try:
        async with asyncio.timeout(context.limits.branch_timeout):
            finding = await investigate(context, task)
    except TimeoutError:
        finding = Finding(collection=task.collection, status="timeout", reason="time budget exceeded")
    except CollectionNotIndexedError:
        finding = Finding(collection=task.collection, status="failed", reason="not indexed")
    except RetrievalError as exc:
        logger.warning("search failed", extra={"collection": task.collection, "reason": exc.reason})
        finding = Finding(collection=task.collection, status="failed", reason="search unavailable")
    except LLMError as exc:
        logger.warning("model failed", extra={"collection": task.collection, "reason": exc.reason})
        finding = Finding(collection=task.collection, status="failed", reason="model unavailable")
    seconds = round(time.monotonic() - started, 4)
    finding = finding.model_copy(update={"seconds": seconds})
    runtime.stream_writer(
        BranchFinished(
            collection=finding.collection,
            status=finding.status,
            sources=len(finding.passages),
            seconds=seconds,
            reason=finding.reason,
        )
    )
    return {"findings": [finding]}


def _findings_in_plan_order(state: ResearchState) -> Sequence[Finding]:
    return state.get("findings", [])


async def synthesize(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, Answer]:
    """Merge the findings into one cited answer."""
    answer = synthesize_extractive(state["plan"], _findings_in_plan_order(state), runtime.context.limits)
    return {"answer": answer}


async def respond_directly(state: ResearchState) -> dict[str, Answer]:
    """Greetings, thanks and help need no search; the bot words the reply."""
    return {"answer": Answer(mode="direct", kind=state["plan"].kind)}
