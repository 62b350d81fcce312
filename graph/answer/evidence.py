"""A run's evidence as the answer step reads it: every round's passages as one ranking (a bridge's
second hop beside the passage that named it), each collection's outcome, the question the plan
carries (as asked, or spelt as the passages write it), and whether it is in another language than
what was found."""

from collections.abc import Sequence

from graph.models import CollectionOutcome, Finding, Plan
from graph.research.reflect import is_about
from retrieval.language import detect_language
from retrieval.passages import Passage
from retrieval.spelling import respell


def merge_passages(findings: Sequence[Finding]) -> tuple[Passage, ...]:
    """Everything every round retrieved, as one ranking, each passage once.

    The first round's passages are ranked as in ``_merge_round``. A follow-up round's passage
    about the entity it looked for comes right after the passage that named that entity (the
    two hops of a bridge question belong together); the follow-ups' other passages come last.
    """
    first = _merge_round([f for f in findings if f.round <= 1])
    later = [f for f in findings if f.round > 1 and f.status == "ok" and f.passages]
    if not later:
        return first
    anchored: dict[str, Passage] = {}
    for finding in later:  # in the order reflect wrote them: best lead first
        about = next((p for p in finding.passages if is_about(p, finding.entity)), None)
        if about is None:
            continue
        origin = finding.origin if any(p.id == finding.origin for p in first) else ""
        origin = origin or (first[0].id if first else "")
        anchored.setdefault(origin, about)
    if len(first) > 1 and first[0].id in anchored and names_each_other(first[0], first[1]):
        # The first two already belong together (one names the other): keep them first.
        anchored[first[1].id] = anchored.pop(first[0].id)
    ranked: dict[str, Passage] = {}
    for passage in first:
        ranked.setdefault(passage.id, passage)
        follower = anchored.get(passage.id)
        if follower is not None:
            ranked.setdefault(follower.id, follower)
    for passage in anchored.values():
        ranked.setdefault(passage.id, passage)
    rest = sorted((p for f in later for p in f.passages), key=lambda p: (-p.score, p.id))
    for passage in rest:
        ranked.setdefault(passage.id, passage)
    return tuple(ranked.values())


def names_each_other(a: Passage, b: Passage) -> bool:
    """Whether either passage names the other's subject (its title, without a parenthesis)."""

    def subject(p: Passage) -> str:
        return p.title.split(" (", 1)[0].split(",", 1)[0].strip().lower()

    return (bool(subject(b)) and subject(b) in a.text.lower()) or (
        bool(subject(a)) and subject(a) in b.text.lower()
    )


def _merge_round(findings: Sequence[Finding]) -> tuple[Passage, ...]:
    """One round's passages as one ranking, each passage once.

    Ranked by raw retrieval score, not rank position: the evidence for a question often sits in
    one collection, and rank fusion would push it out with every other collection's top hit. For a
    comparison decomposed into one sub-query per compared thing, the best passage of each
    sub-query (across collections) goes first, so neither thing is buried under the other's or
    the whole question's hits.
    """
    passages: dict[str, Passage] = {}
    for finding in findings:
        for passage in finding.passages:
            if passage.id not in passages or passage.score > passages[passage.id].score:
                passages[passage.id] = passage
    by_score = sorted(passages.values(), key=lambda p: (-p.score, p.id))
    best_of_slot: dict[int, tuple[float, str]] = {}
    for finding in findings:
        for ranking in finding.rankings:
            if ranking.slot > 0 and ranking.hits:
                pid, score = ranking.hits[0]
                if ranking.slot not in best_of_slot or score > best_of_slot[ranking.slot][0]:
                    best_of_slot[ranking.slot] = (score, pid)
    first = [best_of_slot[slot][1] for slot in sorted(best_of_slot)]
    leaders = [passages[pid] for pid in dict.fromkeys(first) if pid in passages]
    chosen = {p.id for p in leaders}
    return (*leaders, *(p for p in by_score if p.id not in chosen))


def outcomes_of(plan: Plan, findings: Sequence[Finding]) -> tuple[CollectionOutcome, ...]:
    by_name = {f.collection: f for f in findings}
    outcomes = []
    for task in plan.tasks:
        finding = by_name.get(task.collection)
        if finding is None:
            outcomes.append(
                CollectionOutcome(
                    name=task.collection,
                    status="failed",
                    sources=0,
                    seconds=0.0,
                    reason="no result",
                )
            )
        else:
            outcomes.append(
                CollectionOutcome(
                    name=finding.collection,
                    status=finding.status,
                    sources=len(finding.passages),
                    seconds=finding.seconds,
                    reason=finding.reason,
                )
            )
    return tuple(outcomes)


def question_of(plan: Plan) -> str:
    """The question as asked (without ``in:``), as every task carries it."""
    return plan.tasks[0].question if plan.tasks else ""


def spelled_as_found(plan: Plan, passages: Sequence[Passage]) -> Plan:
    """The plan with the question's misspelt names and long words as the passages found write
    them (``retrieval.spelling``), for the answer's checks to read."""
    texts = [text for p in passages for text in (p.title, p.text)]
    question = question_of(plan)
    spelled = respell(question, texts) if question else question
    if spelled == question:
        return plan
    tasks = tuple(t.model_copy(update={"question": spelled}) for t in plan.tasks)  # each carries it
    return plan.model_copy(update={"tasks": tasks, "sides": tuple(respell(s, texts) for s in plan.sides)})


def other_language(question: str, findings: Sequence[Finding]) -> bool:
    """Whether the question is in another language than the passages found for it."""
    sample = " ".join(p.text for f in findings for p in f.passages[:2])[:4000]
    return bool(sample) and detect_language(question) != detect_language(sample)
