"""Graph nodes. Each returns a state update and reports progress on the custom stream."""

import asyncio
import logging
import time

from langgraph.runtime import Runtime
from langgraph.types import Send, StreamWriter

from graph.context import GraphContext
from graph.drafting import draft_with_llm
from graph.elsewhere import search_elsewhere
from graph.events import BranchFinished, BranchStarted, LLMFallback, PlanReady
from graph.extractive import draft_claims
from graph.llm import ChatModel, LLMError
from graph.models import Answer, Claim, Finding, Plan, QueryHits, Question, ResearchTask
from graph.planning import allowed_names, check_requested, plan_from_model, plan_message, plan_research
from graph.prompts import PLAN_PROMPT
from graph.question import classify_question
from graph.schemas import PlanOutput
from graph.state import ResearchState
from graph.synthesis import synthesize_extractive, synthesize_with_llm
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
    if context.llm is not None and result.tasks:
        result = await _plan_with_model(context, context.llm, question, result, runtime)
    runtime.stream_writer(
        PlanReady(
            kind=result.kind,
            routing=result.routing,
            collections=tuple(t.collection for t in result.tasks),
        )
    )
    return {"plan": result}


async def _plan_with_model(
    context: GraphContext, llm: ChatModel, question: Question, heuristic: Plan, runtime: Runtime[GraphContext]
) -> Plan:
    """The model's plan within the rules, or the heuristic plan when it fails or says nothing usable."""
    if heuristic.routing in ("explicit", "channel_default"):
        candidates = [context.collections[t.collection] for t in heuristic.tasks]
    else:
        candidates = [context.collections[n] for n in allowed_names(question, context.collections)]
    try:
        output = await llm.complete_json(
            system=PLAN_PROMPT.replace("{max_fanout}", str(context.limits.max_fanout)),
            user=plan_message(question.text, candidates),
            schema=PlanOutput,
            time_budget=context.budget(
                context.limits.plan_timeout, reserve=context.limits.branch_timeout / 2
            ),
        )
    except LLMError as exc:
        runtime.stream_writer(LLMFallback(stage="plan", reason=exc.reason))
        return heuristic
    planned = plan_from_model(output, question, heuristic, context.collections, context.limits)
    if planned is None:
        runtime.stream_writer(LLMFallback(stage="plan", reason="no usable collections"))
        return heuristic
    return planned


def dispatch(state: ResearchState) -> list[Send] | str:
    """One ``Send`` per research task; questions that need no search go straight to an answer."""
    tasks = state["plan"].tasks
    if not tasks:
        return "respond_directly"
    return [Send("research", task) for task in tasks]


async def _gather(
    context: GraphContext, task: ResearchTask, *, broad: bool
) -> tuple[list[Passage], tuple[QueryHits, ...]]:
    """Run the task's queries; passages keep their best score, and each query's own ranking is
    kept too, so the synthesizer can give every sub-query of a comparison its share."""
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
    rankings = tuple(
        QueryHits(slot=slot, hits=tuple((p.id, p.score) for p in passages))
        for slot, passages in enumerate(results)
    )
    return list(best.values()), rankings


async def investigate(
    context: GraphContext, task: ResearchTask, deadline: float, writer: StreamWriter
) -> Finding:
    """Retrieve, broaden once if nothing came back, then draft claims (with the model if there
    is one; extractively if not, or if the model fails)."""
    passages, rankings = await _gather(context, task, broad=False)
    if not passages:
        passages, rankings = await _gather(context, task, broad=True)
    if not passages:
        return Finding(collection=task.collection, status="empty")
    passages.sort(key=lambda p: -p.score)
    limit = context.limits.claims_per_branch
    claims: list[Claim] | None = None
    dropped = 0
    if context.llm is not None:
        try:
            claims, dropped = await draft_with_llm(
                context.llm,
                task.focus or task.question,
                passages,
                limit=limit,
                time_budget=deadline - time.monotonic(),
            )
        except LLMError as exc:
            if exc.reason == "timeout":
                raise TimeoutError from None  # the model ran past the branch's budget
            writer(LLMFallback(stage="draft", reason=exc.reason, collection=task.collection))
        else:
            if not claims and dropped:
                writer(LLMFallback(stage="draft", reason="no verified claims", collection=task.collection))
                claims, dropped = None, 0
    if claims is None:
        claims = draft_claims(" ".join(task.queries), passages, limit=limit)
    return Finding(
        collection=task.collection,
        status="ok",
        passages=tuple(passages),
        rankings=rankings,
        claims=tuple(claims),
        dropped=dropped,
    )


async def research(state: ResearchTask, runtime: Runtime[GraphContext]) -> dict[str, list[Finding]]:
    """One sub-agent; its input is the ``ResearchTask`` it was sent. Its failure or timeout becomes
    a ``Finding`` that says so; it never raises for a backend or model problem, so one bad
    collection cannot sink the answer."""
    task = state
    context = runtime.context
    runtime.stream_writer(BranchStarted(collection=task.collection))
    started = time.monotonic()
    reserve = 2.0 if context.llm is not None else 0.2  # room left for synthesis
    budget = context.budget(context.limits.branch_timeout, reserve=reserve)
    try:
        async with asyncio.timeout(budget):
            finding = await investigate(context, task, started + budget, runtime.stream_writer)
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
    except Exception:
        # A bug or an unexpected reply in one branch must not sink the whole answer: operators get
        # the traceback in the log, people get a partial answer that names the collection.
        logger.exception("research branch crashed", extra={"collection": task.collection})
        finding = Finding(collection=task.collection, status="failed", reason="internal error")
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


async def synthesize(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, Answer]:
    """Merge the findings into one cited answer: model-written and verified sentence by sentence
    when a model is configured, extractive otherwise or whenever the model's answer is unusable."""
    context = runtime.context
    plan_ = state["plan"]
    findings = state.get("findings", [])  # in the order the branches were sent
    if context.llm is not None and any(f.claims for f in findings):
        try:
            answer, _ = await synthesize_with_llm(
                context.llm,
                state["question"].text,
                plan_,
                findings,
                context.limits,
                time_budget=context.budget(context.limits.synthesis_timeout, reserve=0.1),
            )
        except LLMError as exc:
            runtime.stream_writer(LLMFallback(stage="synthesis", reason=exc.reason))
        else:
            if answer is not None:
                return {"answer": answer}
            runtime.stream_writer(LLMFallback(stage="synthesis", reason="no verified sentences"))
    answer = synthesize_extractive(plan_, findings, context.limits)
    if not answer.found:
        answer = await _answer_from_elsewhere(context, state["question"], plan_, findings, answer)
    return {"answer": answer}


async def _answer_from_elsewhere(
    context: GraphContext, question: Question, plan_: Plan, findings: list[Finding], answer: Answer
) -> Answer:
    """Nothing answered: name (``in:``) or use (automatic routing) the collections that would."""
    names, extra, tasks = await search_elsewhere(context, question, plan_)
    if not names:
        return answer
    if plan_.routing in ("explicit", "channel_default"):
        return answer.model_copy(update={"suggested": names})
    wider = plan_.model_copy(update={"tasks": (*plan_.tasks, *tasks)})
    return synthesize_extractive(wider, [*findings, *extra], context.limits)


async def respond_directly(state: ResearchState) -> dict[str, Answer]:
    """Greetings, thanks and help need no search; the bot words the reply."""
    return {"answer": Answer(mode="direct", kind=state["plan"].kind)}
