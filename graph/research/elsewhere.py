"""When the searched collections do not answer: which other collections this place may search do.

Each unsearched collection the question may use is searched once with the question itself and
drafted extractively; the ones whose evidence covers the question are named. With automatic
routing their findings join the answer; with ``in:`` (or a channel default) the answer only names
them, since the person chose where to look.
"""

import asyncio

from graph.answer.extractive import draft_claims
from graph.answer.synthesis import choose_claims
from graph.context import GraphContext
from graph.models import Finding, Plan, Question, ResearchTask
from graph.research.planning import allowed_names
from retrieval.errors import RetrievalError


async def _finding(context: GraphContext, task: ResearchTask) -> Finding:
    collection = context.collections[task.collection]
    try:
        passages = await context.backend.search(
            collection,
            task.question,
            limit=context.limits.top_k,
            meaning=task.question,
            corpus=tuple(context.collections.values()),
        )
    except RetrievalError:
        return Finding(collection=task.collection, status="failed", reason="search unavailable")
    if not passages:
        return Finding(collection=task.collection, status="empty")
    claims = draft_claims(task.question, passages, limit=context.limits.claims_per_branch)
    return Finding(collection=task.collection, status="ok", passages=tuple(passages), claims=tuple(claims))


async def search_elsewhere(
    context: GraphContext, question: Question, plan: Plan
) -> tuple[tuple[str, ...], list[Finding], list[ResearchTask]]:
    """Collections not yet searched whose evidence covers the question, with their findings and
    tasks (in the order the collections are configured)."""
    searched = {t.collection for t in plan.tasks}
    others = [n for n in allowed_names(question, context.collections) if n not in searched]
    if not others or not plan.tasks:
        return (), [], []
    text = plan.tasks[0].question
    tasks = [ResearchTask(collection=n, queries=(text,), question=text) for n in others]
    findings = await asyncio.gather(*(_finding(context, t) for t in tasks))
    covering = []
    for task, finding in zip(tasks, findings, strict=True):
        alone = plan.model_copy(update={"tasks": (task,)})
        if finding.status == "ok" and choose_claims(alone, [finding], context.limits).coverage.found:
            covering.append((task, finding))
    return tuple(t.collection for t, _ in covering), [f for _, f in covering], [t for t, _ in covering]
