"""Merging findings into one answer: score-aware ranking across collections, near-duplicates
merged, claims grouped by collection, citations numbered [1]…[n] in order of first use, and every
citation checked against the passages retrieved in this run."""

import logging
from collections.abc import Sequence

from graph.citations import best_quote, is_supported, split_cited, verify_cited
from graph.context import ResearchLimits
from graph.extractive import jaccard
from graph.llm import ChatModel
from graph.models import (
    Answer,
    AnswerSection,
    AnswerSentence,
    Citation,
    Claim,
    CollectionOutcome,
    Finding,
    Plan,
)
from graph.prompts import SYNTHESIS_PROMPT, quote_untrusted
from graph.reflect import is_about
from graph.schemas import AnswerOutput
from retrieval.passages import Passage
from retrieval.text import stems

logger = logging.getLogger(__name__)

DUPLICATE = 0.7
RELEVANCE_FLOOR = 0.35


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
    if len(first) > 1 and first[0].id in anchored and _linked(first[0], first[1]):
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


def _linked(a: Passage, b: Passage) -> bool:
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


def _ranked_claims(findings: Sequence[Finding]) -> list[tuple[float, Claim, str]]:
    """Claims with a score comparable across collections: question coverage plus the cited
    passage's raw retrieval score relative to the best passage of the whole run."""
    top = max((p.score for f in findings for p in f.passages), default=0.0) or 1.0
    scored = []
    for finding in findings:
        if finding.status != "ok":
            continue
        scores = {p.id: p.score for p in finding.passages}
        for claim in finding.claims:
            retrieval = max((scores.get(pid, 0.0) for pid in claim.passage_ids), default=0.0) / top
            scored.append((0.6 * claim.coverage + 0.4 * retrieval, claim, finding.collection))
    scored.sort(key=lambda item: -item[0])
    return scored


def select_claims(plan: Plan, findings: Sequence[Finding], limits: ResearchLimits) -> list[tuple[Claim, str]]:
    """The claims worth saying: the best ones, no near-duplicates, and for a comparison at least
    the best claim of every collection that found something."""
    ranked = _ranked_claims(findings)
    if not ranked:
        return []
    floor = RELEVANCE_FLOOR * ranked[0][0]
    kept: list[tuple[Claim, str]] = []
    kept_stems: list[set[str]] = []
    must = {c for _, _, c in ranked} if plan.kind == "comparative" else set()
    for score, claim, collection in ranked:
        own = stems(claim.text)
        duplicate = next((i for i, other in enumerate(kept_stems) if jaccard(own, other) >= DUPLICATE), None)
        if duplicate is not None:
            merged_ids = tuple(dict.fromkeys(kept[duplicate][0].passage_ids + claim.passage_ids))
            kept[duplicate] = (
                kept[duplicate][0].model_copy(update={"passage_ids": merged_ids}),
                kept[duplicate][1],
            )
            continue
        needed = collection in must and all(c != collection for _, c in kept)
        if not needed and (score < floor or len(kept) >= limits.answer_sentences):
            continue
        kept.append((claim, collection))
        kept_stems.append(own)
    return kept


def build_answer(
    plan: Plan,
    findings: Sequence[Finding],
    claims: Sequence[tuple[Claim, str]],
    *,
    mode: str = "extractive",
) -> tuple[Answer, int]:
    """Group claims by collection (collections ordered by their best claim), number citations in
    order of first use, and drop any sentence whose citation is not a supported, retrieved passage.
    Returns the answer and how many sentences were dropped."""
    retrieved = {p.id: p for f in findings for p in f.passages}
    order: list[str] = []
    grouped: dict[str, list[Claim]] = {}
    for claim, collection in claims:
        if collection not in grouped:
            order.append(collection)
            grouped[collection] = []
        grouped[collection].append(claim)
    numbers: dict[str, int] = {}
    citations: list[Citation] = []
    sections: list[AnswerSection] = []
    dropped = 0
    for collection in order:
        sentences: list[AnswerSentence] = []
        for claim in grouped[collection]:
            cited = [retrieved[pid] for pid in claim.passage_ids if pid in retrieved]
            if not cited or not is_supported(claim.text, (p.text for p in cited)):
                dropped += 1
                continue
            refs = []
            for passage in cited:
                if passage.id not in numbers:
                    numbers[passage.id] = len(citations) + 1
                    citations.append(Citation(n=numbers[passage.id], passage=passage, quote=claim.text))
                refs.append(numbers[passage.id])
            sentences.append(AnswerSentence(text=claim.text, citations=tuple(refs)))
        if sentences:
            sections.append(AnswerSection(collection=collection, sentences=tuple(sentences)))
    if dropped:
        logger.info("dropped %d unsupported sentences", dropped)
    answer = Answer(
        mode="llm" if mode == "llm" else "extractive",
        kind=plan.kind,
        sections=tuple(sections),
        citations=tuple(citations),
        outcomes=outcomes_of(plan, findings),
        retrieved=merge_passages(findings),
        dropped=dropped + sum(f.dropped for f in findings),
    )
    return answer, dropped


def synthesize_extractive(plan: Plan, findings: Sequence[Finding], limits: ResearchLimits) -> Answer:
    answer, _ = build_answer(plan, findings, select_claims(plan, findings, limits))
    return answer


async def synthesize_with_llm(
    llm: ChatModel,
    question: str,
    plan: Plan,
    findings: Sequence[Finding],
    limits: ResearchLimits,
    *,
    time_budget: float,
) -> tuple[Answer | None, int]:
    """The model writes the answer from the verified claims only; every sentence it writes is
    checked again against the passages its ``[n]`` point to, and dropped if unsupported.
    Returns ``None`` (use the extractive answer) when nothing survives."""
    selected = select_claims(plan, findings, limits)
    if not selected:
        return None, 0
    retrieved = {p.id: p for f in findings for p in f.passages}
    numbers: dict[str, int] = {}
    lines = []
    for claim, collection in selected:
        markers = []
        for pid in claim.passage_ids:
            if pid in retrieved:
                numbers.setdefault(pid, len(numbers) + 1)
                markers.append(f"[{numbers[pid]}]")
        lines.append(
            f'<claim collection="{collection}">{quote_untrusted(claim.text)}</claim> {"".join(markers)}'
        )
    sources = {n: retrieved[pid] for pid, n in numbers.items()}
    output = await llm.complete_json(
        system=SYNTHESIS_PROMPT,
        user=f"Question: {quote_untrusted(question)}\n\n" + "\n".join(lines),
        schema=AnswerOutput,
        time_budget=time_budget,
    )
    renumbered: dict[str, int] = {}
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    dropped = 0
    for text, cited_numbers in split_cited(output.answer):
        cited = verify_cited(text, cited_numbers, sources)
        if cited is None:
            dropped += 1
            continue
        for passage in cited:
            if passage.id not in renumbered:
                renumbered[passage.id] = len(citations) + 1
                citations.append(
                    Citation(n=renumbered[passage.id], passage=passage, quote=best_quote(text, passage))
                )
        sentences.append(
            AnswerSentence(text=text, citations=tuple(dict.fromkeys(renumbered[p.id] for p in cited)))
        )
    if dropped:
        logger.info("dropped %d unsupported model sentences", dropped)
    if not sentences:
        return None, dropped
    answer = Answer(
        mode="llm",
        kind=plan.kind,
        sections=(AnswerSection(collection="", sentences=tuple(sentences)),),
        citations=tuple(citations),
        outcomes=outcomes_of(plan, findings),
        retrieved=merge_passages(findings),
        dropped=dropped + sum(f.dropped for f in findings),
    )
    return answer, dropped
