"""Graph nodes. Each returns a state update and reports progress on the custom stream."""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence

from langgraph.runtime import Runtime
from langgraph.types import Send, StreamWriter

from graph.answer.drafting import draft_with_llm
from graph.answer.evidence import merge_passages, outcomes_of, question_of
from graph.answer.extractive import draft_claims
from graph.answer.reading import answer_from_evidence
from graph.answer.verdict import with_verdict
from graph.answer.written import synthesize_with_llm
from graph.context import GraphContext
from graph.events import BranchFinished, BranchStarted, FollowUp, LLMFallback, PlanReady, SentenceVerified
from graph.llm.port import ChatModel, LLMError
from graph.llm.prompts import PLAN_PROMPT
from graph.llm.schemas import PlanOutput
from graph.models import (
    Answer,
    Claim,
    CollectionOutcome,
    Finding,
    JoinTask,
    Plan,
    QueryHits,
    Question,
    ResearchRound,
    ResearchTask,
)
from graph.research.planning import (
    allowed_names,
    check_requested,
    plan_from_model,
    plan_message,
    plan_research,
)
from graph.research.question import DIRECT_KINDS, classify_question
from graph.research.reflect import (
    REFLECT_PROMPT,
    Lead,
    ReflectOutput,
    heuristic_leads,
    is_about,
    keep_second,
    reflect_message,
    validate_proposals,
)
from graph.research.scores import comparable_findings
from graph.spans import branch_span
from graph.state import ResearchState
from graph.trace import decided
from retrieval.errors import CollectionNotIndexedError, RetrievalError
from retrieval.passages import Passage

logger = logging.getLogger(__name__)

DRAFT_MARGIN = 0.25  # seconds of a branch's budget kept for its extractive claims after a draft
ROUTES_PER_LEAD = 2


async def plan(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, object]:
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
        scores = await context.backend.probe(allowed, question.text, meaning=question.text)
    result = plan_research(question, kind, context.collections, scores, context.limits)
    context.trace.plan(result, scores, context.limits.routing_ratio)
    join = False
    if context.llm is not None and context.work is not None and result.tasks:
        # The rule-based plan's searches start now; the model's plan, asked at the same time,
        # joins this round when it comes (``join_model``) and may add collections to it.
        result = _drafted(result, context.limits.drafted_branches)
        context.work.base[1] = result
        context.work.expect(1, len(result.tasks))
        context.work.plan = asyncio.create_task(
            _plan_with_model(context, context.llm, question, result), name="confer-model-plan"
        )
        join = True
    runtime.stream_writer(
        PlanReady(
            kind=result.kind,
            routing=result.routing,
            collections=tuple(t.collection for t in result.tasks),
        )
    )
    return {"plan": result, "round": 1, "round_started": time.monotonic(), "follow_ups": (), "join": join}


async def _plan_with_model(
    context: GraphContext, llm: ChatModel, question: Question, heuristic: Plan
) -> tuple[Plan | None, str]:
    """The model's plan within the rules, or ``None`` and why when it fails or says nothing usable."""
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
        return None, exc.reason
    planned = plan_from_model(output, question, heuristic, context.collections, context.limits)
    if planned is None:
        return None, "no usable collections"
    return planned, ""


def _drafted(plan_: Plan, branches: int) -> Plan:
    """The plan with only its ``branches`` best-ranked tasks (the first: routing ranks them) drafted
    by the model; the others' claims are extractive."""
    tasks = tuple(t.model_copy(update={"draft": i < branches}) for i, t in enumerate(plan_.tasks))
    return plan_.model_copy(update={"tasks": tasks})


async def dispatch(state: ResearchState) -> list[Send] | str:
    """One ``Send`` per research task; questions that need no search go straight to an answer.
    (Async, like ``follow_up``: LangGraph runs a synchronous route in a worker thread.)"""
    tasks = state["plan"].tasks
    if not tasks:
        return "respond_directly"
    joined = [Send("join_model", JoinTask(round=1))] if state.get("join") else []
    return [*(Send("research", task) for task in tasks), *joined]


async def follow_up(state: ResearchState) -> list[Send] | str:
    """One ``Send`` per follow-up task that ``reflect`` wrote; none left: synthesize."""
    tasks = state.get("follow_ups", ())
    if not tasks:
        return "synthesize"
    joined = [Send("join_model", JoinTask(round=state.get("round", 2)))] if state.get("join") else []
    return [*(Send("research", task) for task in tasks), *joined]


async def _gather(
    context: GraphContext, task: ResearchTask, *, broad: bool
) -> tuple[list[Passage], tuple[QueryHits, ...]]:
    """Run the task's queries; passages keep their best score, and each query's own ranking is
    kept too, so the synthesizer can give every sub-query of a comparison its share."""
    collection = context.collections[task.collection]
    queries = task.queries if not broad else task.queries[:1]
    # By meaning, the question itself (embedded once for every branch), or a follow-up's lead; the
    # word scores with every collection's statistics, so that the branches' results rank together.
    meaning = task.question if task.round == 1 else task.queries[0]
    corpus = tuple(context.collections.values())

    def search(query: str) -> Awaitable[list[Passage]]:
        return context.backend.search(
            collection, query, limit=context.limits.top_k, broad=broad, meaning=meaning, corpus=corpus
        )

    if len(queries) == 1:  # most tasks: no task and no gather around the one search
        results = [await search(queries[0])]
    else:
        results = await asyncio.gather(*(search(q) for q in queries))
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
    if task.round > 1 and task.entity:
        # A follow-up is about its entity: the passage about it goes first whatever its score.
        passages.sort(key=lambda p: (not is_about(p, task.entity), -p.score))
        rankings = (QueryHits(slot=0, hits=tuple((p.id, p.score) for p in passages)),)
    else:
        passages.sort(key=lambda p: -p.score)
    limit = context.limits.claims_per_branch
    claims: list[Claim] | None = None
    dropped = 0
    drop_reasons: tuple[str, ...] = ()
    if context.llm is not None and task.draft:
        # The draft's budget ends before the branch's: a slow or failed draft leaves the passages
        # already found to extractive claims, never the branch to a time-out.
        budget = min(context.limits.draft_timeout, deadline - time.monotonic() - DRAFT_MARGIN)
        try:
            claims, drop_reasons = await draft_with_llm(
                context.llm,
                task.focus or task.question,
                passages,
                limit=limit,
                time_budget=budget,
            )
        except LLMError as exc:
            writer(LLMFallback(stage="draft", reason=exc.reason, collection=task.collection))
        else:
            dropped = len(drop_reasons)
            if not claims and dropped:
                writer(LLMFallback(stage="draft", reason="no verified claims", collection=task.collection))
                claims, dropped, drop_reasons = None, 0, ()
    if claims is None:
        # A follow-up's sentences must still answer the question, now about its entity too.
        query = " ".join(task.queries) if task.round == 1 else f"{task.question} {task.entity}"
        claims = draft_claims(query, passages, limit=limit)
    return Finding(
        collection=task.collection,
        status="ok",
        passages=tuple(passages),
        rankings=rankings,
        claims=tuple(claims),
        dropped=dropped,
        drop_reasons=drop_reasons,
    )


async def research(state: ResearchTask, runtime: Runtime[GraphContext]) -> dict[str, list[Finding]]:
    """One sub-agent; its input is the ``ResearchTask`` it was sent. Its failure or timeout becomes
    a ``Finding`` that says so; it never raises for a backend or model problem, so one bad
    collection cannot sink the answer."""
    found = False
    try:
        finding = await run_branch(state, runtime.context, runtime.stream_writer)
        found = bool(finding.passages)
        return {"findings": [finding]}
    finally:
        if runtime.context.work is not None:
            runtime.context.work.finished(state.round, found=found)


async def run_branch(task: ResearchTask, context: GraphContext, writer: StreamWriter) -> Finding:
    """One research branch from start to finish, with its progress events, in a span of its own."""
    with branch_span(task.collection, task.round, task.entity):
        return await _run_branch(task, context, writer)


async def _run_branch(task: ResearchTask, context: GraphContext, writer: StreamWriter) -> Finding:
    writer(BranchStarted(collection=task.collection, round=task.round, entity=task.entity))
    started = time.monotonic()
    reserve = 2.0 if context.llm is not None else 0.2  # room left for synthesis
    budget = context.budget(context.limits.branch_timeout, reserve=reserve)
    try:
        async with asyncio.timeout(budget):
            finding = await investigate(context, task, started + budget, writer)
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
    finding = finding.model_copy(
        update={"seconds": seconds, "round": task.round, "entity": task.entity, "origin": task.origin}
    )
    context.trace.branch(task, finding)
    writer(
        BranchFinished(
            collection=finding.collection,
            status=finding.status,
            sources=len(finding.passages),
            seconds=seconds,
            reason=finding.reason,
            round=task.round,
            entity=task.entity,
            links=_links(finding.passages),
        )
    )
    return finding


def _links(passages: Sequence[Passage]) -> tuple[tuple[str, str], ...]:
    """(url, title) of each distinct source URL, in rank order (the first passage names it)."""
    links: dict[str, str] = {}
    for passage in passages:
        if passage.url:
            links.setdefault(passage.url, passage.title)
    return tuple(links.items())


def _round_summary(tasks: Sequence[ResearchTask], seconds: float) -> ResearchRound:
    return ResearchRound(
        collections=tuple(dict.fromkeys(t.collection for t in tasks)),
        queries=tuple(q for t in tasks for q in t.queries),
        entities=tuple(t.entity for t in tasks if t.entity),
        seconds=round(seconds, 4),
    )


def follow_up_collections(question: Question, plan_: Plan, context: GraphContext) -> tuple[str, ...]:
    """Where follow-ups may go: the collections named with ``in:`` when there are any, else every
    collection this place may search (the bridge entity often lives in another one)."""
    if plan_.routing == "explicit":
        return tuple(t.collection for t in plan_.tasks)
    return allowed_names(question, context.collections)


async def _route_leads(
    context: GraphContext, leads: Sequence[Lead], candidates: tuple[str, ...]
) -> list[tuple[Lead, str]]:
    """Route each lead to the allowed collections where its query matches best (one probe each)."""
    collections = [context.collections[n] for n in candidates]
    if len(collections) == 1:
        return [(lead, collections[0].name) for lead in leads]
    scores = await asyncio.gather(
        *(context.backend.probe(collections, lead.query, meaning=lead.query) for lead in leads)
    )
    routed = []
    for lead, found in zip(leads, scores, strict=True):
        # A name scores high where it is mentioned as well as where it is the subject: the two
        # best collections within the routing ratio of the best.
        ranked = sorted((n for n in found if n in candidates), key=lambda n: -found[n])
        best = found[ranked[0]] if ranked else 0.0
        routed += [
            (lead, n) for n in ranked[:ROUTES_PER_LEAD] if found[n] >= context.limits.routing_ratio * best
        ]
    return routed


async def _propose_with_model(
    context: GraphContext,
    llm: ChatModel,
    question: Question,
    findings: Sequence[Finding],
    candidates: tuple[str, ...],
    fallback_origin: str,
) -> tuple[list[tuple[Lead, str]] | None, str]:
    """The model's follow-ups, validated; ``None`` and why when it fails or proposes nothing usable."""
    if not any(f.claims for f in findings):
        return None, ""
    user, sources = reflect_message(
        question.text, findings, {n: context.collections[n].title for n in candidates}
    )
    try:
        output = await llm.complete_json(
            system=REFLECT_PROMPT.replace("{max_follow_ups}", str(context.limits.follow_ups)),
            user=user,
            schema=ReflectOutput,
            time_budget=context.budget(
                context.limits.plan_timeout, reserve=context.limits.branch_timeout / 2
            ),
        )
    except LLMError as exc:
        return None, exc.reason
    proposals = validate_proposals(output, candidates, sources, fallback_origin, context.limits.follow_ups)
    if proposals is None:
        return None, "no usable follow-ups"
    return [(p.lead, p.collection) for p in proposals], ""


def _follow_up_tasks(
    question: Question, routed: Sequence[tuple[Lead, str]], number: int, searched: set[tuple[str, str]]
) -> tuple[ResearchTask, ...]:
    return tuple(
        ResearchTask(
            collection=collection,
            queries=(lead.query,),
            focus=lead.entity,
            question=question.text,
            round=number + 1,
            entity=lead.entity,
            origin=lead.origin,
            draft=False,  # a follow-up's passages are quoted: no second wave of drafts to wait for
        )
        for lead, collection in routed
        if (lead.entity.lower(), collection) not in searched
    )


async def join_model(state: JoinTask, runtime: Runtime[GraphContext]) -> dict[str, object]:
    """The model's late work for a round: its plan (round 1: collections the rule-based plan did
    not choose) or its follow-up proposals (later rounds: targets the rule-based follow-ups did not
    cover). Taken when it arrives before the round's research branches have all finished, then
    researched here as branches of that round; otherwise left (the rules' work stands)."""
    task = state
    context = runtime.context
    work = context.work
    pending = None if work is None else (work.plan if task.round == 1 else work.follow_ups)
    if work is None or pending is None:
        return {}
    stage = "plan" if task.round == 1 else "reflect"
    round_over = asyncio.ensure_future(work.round_done(task.round))
    try:
        await asyncio.wait(
            {pending, round_over},
            timeout=context.budget(context.limits.branch_timeout),
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        round_over.cancel()
    if not pending.done() and task.round == 1 and not work.found(1):
        # The rules' searches found nothing: the model's plan (a query in the documents' language,
        # another collection) is all there is left to wait for.
        await asyncio.wait({pending}, timeout=context.budget(context.limits.plan_timeout))
    if not pending.done():
        pending.cancel()
        runtime.stream_writer(LLMFallback(stage=stage, reason="after its round"))
        return {}
    if pending.cancelled():
        return {}
    result, reason = pending.result()
    if result is None:
        if reason:
            runtime.stream_writer(LLMFallback(stage=stage, reason=reason))
        return {}
    if task.round == 1:
        # Whether the rules' searches found anything decides how the plan's additions are drafted:
        # wait for them (they are this round's own branches, so this costs the round nothing).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(work.round_done(1), context.budget(context.limits.branch_timeout))
        return await _join_plan(context, work.base[1], result, runtime.stream_writer, fresh=not work.found(1))
    return await _join_follow_ups(context, work.base.get(task.round, ()), result, task.round, runtime)


async def _join_plan(
    context: GraphContext, base: Plan, planned: Plan, writer: StreamWriter, *, fresh: bool
) -> dict[str, object]:
    """What the model's plan adds, searched now: the collections it adds, and its queries for
    planned collections (a query in the language a collection's documents are in, say) whose
    searches find passages. ``fresh``: the rules' searches found nothing, so these are drafted like
    the plan's best branches; otherwise their claims are quoted (the round's drafts are running) and
    a planned collection's extra query adds passages only."""
    planned_tasks = {t.collection: t for t in base.tasks}
    added = tuple(
        t.model_copy(update={"draft": fresh}) for t in planned.tasks if t.collection not in planned_tasks
    )
    requeried = tuple(
        t.model_copy(update={"draft": fresh, "queries": t.queries if fresh else new})
        for t in planned.tasks
        if t.collection in planned_tasks
        and (new := tuple(q for q in t.queries if q not in planned_tasks[t.collection].queries))
    )
    if not added and not requeried:
        return {}
    update: dict[str, object] = {}
    if added:
        context.trace.added(added, "model")
        wider = base.model_copy(update={"tasks": (*base.tasks, *added)})
        writer(
            PlanReady(
                kind=wider.kind, routing=wider.routing, collections=tuple(t.collection for t in wider.tasks)
            )
        )
        update["plan"] = wider
    found = await asyncio.gather(
        *(run_branch(t, context, writer) for t in added),
        *(run_branch(t, context, _quiet) for t in requeried),  # more of a branch already shown
    )
    # A planned collection's extra query adds its passages only when it found some.
    extra = [
        f if fresh else f.model_copy(update={"claims": ()}) for f in found[len(added) :] if f.status == "ok"
    ]
    update["findings"] = [*found[: len(added)], *extra]
    return update


def _quiet(event: object) -> None:
    """A stream writer that shows nothing."""


async def _join_follow_ups(
    context: GraphContext,
    base: Sequence[ResearchTask],
    routed: Sequence[tuple[Lead, str]],
    number: int,
    runtime: Runtime[GraphContext],
) -> dict[str, object]:
    """The model's follow-ups the rule-based ones did not cover, searched now in their round."""
    question = base[0].question if base else ""
    searched = {(t.entity.lower(), t.collection) for t in base}
    tasks = (
        _follow_up_tasks(Question(text=question, allowed=()), routed, number - 1, searched)
        if question
        else ()
    )
    if not tasks:
        return {}
    runtime.stream_writer(FollowUp(round=number, targets=tuple((t.entity, t.collection) for t in tasks)))
    context.trace.follow_ups(number - 1, tasks, "model")
    findings = await asyncio.gather(*(run_branch(t, context, runtime.stream_writer) for t in tasks))
    return {"findings": list(findings)}


async def reflect(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, object]:
    """Read the round's findings and decide what the question still needs: follow-up tasks for
    the next round, or none (then the graph synthesizes). Stops at ``max_rounds`` and when another
    round would not fit in the question's time budget."""
    context = runtime.context
    plan_ = state["plan"]
    number = state.get("round", 1)
    findings = state.get("findings", [])
    tasks = plan_.tasks if number == 1 else state.get("follow_ups", ())
    elapsed = time.monotonic() - state.get("round_started", time.monotonic())
    update: dict[str, object] = {"rounds": [_round_summary(tasks, elapsed)], "follow_ups": (), "join": False}
    if number >= context.limits.max_rounds:
        return update
    reserve = 2.0 if context.llm is not None else 0.2
    if context.deadline is not None and context.deadline - time.monotonic() - reserve < 2 * elapsed:
        return update  # another round like this one would not leave time to answer
    question = state["question"]
    findings = comparable_findings(findings)
    ranked = merge_passages(findings)
    unavailable = {f.collection for f in findings if f.status in ("failed", "timeout")}
    candidates = tuple(n for n in follow_up_collections(question, plan_, context) if n not in unavailable)
    if not ranked or not candidates:
        return update
    covered = [
        *(t.focus for t in plan_.tasks if t.focus),
        *(f"{c.name.replace('_', ' ')} {c.title}" for c in context.collections.values()),
    ]
    leads = heuristic_leads(question, plan_.kind, plan_.sides, ranked, context.limits.follow_ups, covered)
    asked = {(t.entity.lower(), t.collection) for t in plan_.tasks}
    try:
        routed = await _route_leads(context, leads, candidates)
    except RetrievalError:
        return update  # routing failed: answer with what the first rounds found
    routed = [(lead, c) for lead, c in routed if (lead.entity.lower(), c) not in asked]
    kept = keep_second(question, plan_.sides, ranked, [lead for lead, _ in routed])
    routed = [(lead, collection) for lead, (_, collection) in zip(kept, routed, strict=True)]
    searched = {(f.entity.lower(), f.collection) for f in findings if f.entity}
    follow_ups = _follow_up_tasks(question, routed, number, searched)
    if follow_ups:
        context.trace.follow_ups(number, follow_ups, "rules")
        runtime.stream_writer(
            FollowUp(round=number + 1, targets=tuple((t.entity, t.collection) for t in follow_ups))
        )
        update.update({"follow_ups": follow_ups, "round": number + 1, "round_started": time.monotonic()})
        if context.llm is not None and context.work is not None:
            # The rules' follow-ups start at once; the model's proposals, asked now, join their
            # round if they come before its branches have finished (``join_model``).
            current = [f for f in findings if f.round == number]
            context.work.follow_ups = asyncio.create_task(
                _propose_with_model(context, context.llm, question, current, candidates, ranked[0].id),
                name="confer-model-follow-ups",
            )
            context.work.base[number + 1] = follow_ups
            context.work.expect(number + 1, len(follow_ups))
            update["join"] = True
    return update


def outcomes_across_rounds(answer: Answer, findings: Sequence[Finding]) -> tuple[CollectionOutcome, ...]:
    """The plan's outcomes, plus one for each follow-up that failed or timed out (so the answer
    says it is partial while keeping everything the earlier rounds found)."""
    extra = [
        CollectionOutcome(
            name=f.collection,
            status=f.status,
            sources=0,
            seconds=f.seconds,
            reason=f.reason,
            round=f.round,
        )
        for f in findings
        if f.round > 1 and f.status in ("failed", "timeout")
    ]
    return (*answer.outcomes, *extra)


async def synthesize(state: ResearchState, runtime: Runtime[GraphContext]) -> dict[str, Answer]:
    """The answer from every round's findings, with the rounds it took."""
    answer = await _synthesize(state, runtime)
    verdicted = with_verdict(question_of(state["plan"]), state["plan"], answer)
    if answer.mode == "llm" and len(verdicted.sections) > len(answer.sections):
        # A model-written answer was shown as it was verified: its verdict comes after it.
        verdicted = verdicted.model_copy(
            update={"sections": (*verdicted.sections[1:], verdicted.sections[0])}
        )
    answer = verdicted
    findings = state.get("findings", [])
    if any(f.round > 1 for f in findings):
        first = [f for f in findings if f.round == 1]
        outcomes = answer.model_copy(update={"outcomes": outcomes_of(state["plan"], first)})
        answer = answer.model_copy(update={"outcomes": outcomes_across_rounds(outcomes, findings)})
    # The answer step's decision, for the trace: its own, or read from the answer.
    return {"answer": decided(answer.model_copy(update={"rounds": tuple(state.get("rounds", ()))}))}


async def _synthesize(state: ResearchState, runtime: Runtime[GraphContext]) -> Answer:
    """Merge the findings into one cited answer: model-written and verified sentence by sentence
    when a model is configured, extractive otherwise or whenever the model's answer is unusable."""
    context = runtime.context
    plan_ = state["plan"]
    findings = comparable_findings(state.get("findings", []))  # in the order the branches were sent
    if context.llm is not None and any(f.claims for f in findings):
        try:
            answer, _ = await synthesize_with_llm(
                context.llm,
                state["question"].text,
                plan_,
                findings,
                context.limits,
                time_budget=context.budget(context.limits.synthesis_timeout, reserve=0.1),
                on_sentence=lambda sentence: runtime.stream_writer(SentenceVerified(sentence=sentence)),
            )
        except LLMError as exc:
            runtime.stream_writer(LLMFallback(stage="synthesis", reason=exc.reason))
        else:
            if answer is not None:
                return answer
            runtime.stream_writer(LLMFallback(stage="synthesis", reason="no verified sentences"))
    return await answer_from_evidence(context, state["question"], plan_, findings)


async def respond_directly(state: ResearchState) -> dict[str, Answer]:
    """Greetings, thanks and help need no search; the bot words the reply."""
    return {"answer": Answer(mode="direct", kind=state["plan"].kind)}
