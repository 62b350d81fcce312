"""The extractive answer read from a run's evidence: by words and by meaning, again as the
passages spell a mistyped word, and, when nothing answers, from the collections that would."""

from collections.abc import Sequence

from graph.answer.evidence import merge_passages, question_of, spelled_as_found
from graph.answer.meaning import (
    Closeness,
    TermAliases,
    candidates,
    read_also,
    sentence_closeness,
    term_aliases,
)
from graph.answer.synthesis import synthesize_extractive
from graph.context import GraphContext
from graph.models import Answer, Finding, Plan, Question
from graph.research.elsewhere import search_elsewhere
from graph.research.scores import comparable_findings
from retrieval.passages import Passage


async def answer_from_evidence(
    context: GraphContext, question: Question, plan_: Plan, findings: list[Finding]
) -> Answer:
    """The extractive answer to ``question`` from the run's ``findings``."""
    languages = _languages(context, plan_)
    merged = merge_passages(findings)
    # A name or long word the asker mistyped, read as the passages write it: the search found
    # them by meaning, the checks below read words. The respelling is read from what the search
    # found for the question as typed; where only the question as typed is answered (a word no
    # passage writes is then read by meaning), that reading stands.
    spelled = spelled_as_found(plan_, merged)
    answer = await _read_evidence(context, spelled, findings, merged, languages)
    if not answer.found and spelled is not plan_:
        as_typed = await _read_evidence(context, plan_, findings, merged, languages)
        answer = as_typed if as_typed.found else answer
    if not answer.found:
        answer = await _answer_from_elsewhere(context, question, spelled, findings, answer)
    return answer


async def _read_evidence(
    context: GraphContext,
    plan_: Plan,
    findings: list[Finding],
    merged: Sequence[Passage],
    languages: set[str],
) -> Answer:
    """The extractive answer to the plan's question from the findings, read by words and meaning."""
    # Whether the best sentences mean what was asked: decided beside the question's words.
    closeness = await sentence_closeness(question_of(plan_), merged, context.backend)
    # The answer judge reads every sentence of the best passages by meaning too.
    judged = None if closeness is None else await read_also(closeness, candidates(merged), context.backend)
    answer = await _extractive(context, plan_, findings, languages, closeness, judged)
    if not answer.found and answer.retrieved:
        # Words people use that no passage writes: read them by meaning, then decide again.
        aliases = await term_aliases(question_of(plan_), merged, context.backend)
        if aliases:
            answer = await _extractive(
                context, plan_, findings, languages, closeness, judged, aliases=aliases
            )
    return answer


async def _answer_from_elsewhere(
    context: GraphContext, question: Question, plan_: Plan, findings: list[Finding], answer: Answer
) -> Answer:
    """Nothing answered: name (``in:``) or use (automatic routing) the collections that would."""
    names, extra, tasks = await search_elsewhere(context, question, plan_)
    context.trace.elsewhere(tasks, extra)
    if not names:
        return answer
    if plan_.routing in ("explicit", "channel_default"):
        return answer.model_copy(update={"suggested": names})
    wider = plan_.model_copy(update={"tasks": (*plan_.tasks, *tasks)})
    everything = comparable_findings([*findings, *extra])
    merged = merge_passages(everything)
    closeness = await sentence_closeness(question_of(wider), merged, context.backend)
    judged = None if closeness is None else await read_also(closeness, candidates(merged), context.backend)
    return await _extractive(context, wider, everything, _languages(context, wider), closeness, judged)


async def _extractive(
    context: GraphContext,
    plan_: Plan,
    findings: list[Finding],
    languages: set[str],
    closeness: Closeness | None,
    judged: Closeness | None,
    *,
    aliases: TermAliases | None = None,
) -> Answer:
    """The extractive answer with sentences read by meaning: the best passages' (``closeness``),
    those the words alone would quote, and then any other the answer quotes from beyond them, the
    answer chosen again with those read. ``judged``: what the answer judge reads by meaning."""

    def synthesize(read: Closeness | None) -> Answer:
        return synthesize_extractive(
            plan_,
            findings,
            context.limits,
            languages=languages,
            aliases=aliases,
            closeness=read,
            judged_closeness=judged,
        )

    if closeness is None:
        return synthesize(None)
    closeness = await read_also(closeness, _quoted(synthesize(None)), context.backend)
    answer = synthesize(closeness)
    quoted = _quoted(answer)
    if all(closeness.of(p.id, s) is not None for p, s in quoted):
        return answer
    return synthesize(await read_also(closeness, quoted, context.backend))


def _quoted(answer: Answer) -> list[tuple[Passage, str]]:
    """The sentences an answer quotes, each with its first cited passage. Not those a "not found"
    offers as the closest: read, one offered because the answer judge ranks it first could become
    the answer by meaning alone, without the words' checks that made the reply "not found"."""
    cited = {c.n: c.passage for c in answer.citations}
    sentences = [s for section in answer.sections for s in section.sentences]
    return [(cited[s.citations[0]], s.text) for s in sentences if s.citations and s.citations[0] in cited]


def _languages(context: GraphContext, plan_: Plan) -> set[str]:
    """The languages the plan's collections declare their documents to be in."""
    return {
        context.collections[t.collection].language for t in plan_.tasks if t.collection in context.collections
    }
