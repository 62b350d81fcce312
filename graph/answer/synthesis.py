"""Merging findings into one answer: score-aware ranking across collections, near-duplicates
merged, claims grouped by collection, citations numbered [1]…[n] in order of first use, and every
citation checked against the passages retrieved in this run."""

import logging
import math
from collections.abc import Collection, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from graph.answer.compose import (
    DUPLICATE,
    as_claims,
    concise,
    judge_evidence,
    judgement_of,
    says_the_same,
    with_continuation,
    with_introduced,
    with_likeliest,
)
from graph.answer.compose import closest as closest_sentences
from graph.answer.evidence import merge_passages, names_each_other, other_language, outcomes_of, question_of
from graph.answer.extractive import jaccard
from graph.answer.hops import add_followed, both_hops, hop_missing
from graph.answer.judge import Judges
from graph.answer.meaning import ANSWERS, RELATED, Closeness, TermAliases, quotable_sentences
from graph.answer.relevance import (
    ANSWER_BONUS,
    Coverage,
    QuestionFocus,
    assess_coverage,
    bears_on,
    entity_share,
    focus_of,
    names_entity,
    offers_answer,
    term_coverage,
)
from graph.context import ResearchLimits
from graph.models import (
    Answer,
    AnswerSection,
    AnswerSentence,
    Citation,
    Claim,
    Finding,
    Plan,
)
from graph.research.reflect import is_about
from graph.trace import passed_over
from graph.verify.citations import best_quote, is_supported
from retrieval.language import DEFAULT_LANGUAGE, detect_language
from retrieval.passages import Passage
from retrieval.scoring import is_hybrid
from retrieval.text import stems, tokens, words

logger = logging.getLogger(__name__)

RELEVANCE_FLOOR = 0.35
# The closest sentence is offered under a "not found" only when it carries this much of the ask,
# or, read by meaning, when it is related to the question (``RELATED``) and names what it names.
CLOSEST_COVERAGE = 0.3
# Share of a compared side's words a sentence (or its title) must name to speak of that side.
SIDE_SHARE = 0.6
# Extractive answers read every sentence of the run's best passages, not only the drafted ones.
PASSAGES_READ = 10
RELEVANCE_WEIGHT = 0.8
LEAD_BONUS = 0.1
# Picking the answer's sentences one by one, key terms a kept sentence already carries count
# this much less: the next sentence should carry the rest of the ask (a bridge's second hop).
COVERED_DISCOUNT = 1.0
# Read by meaning, a document's sentences stay in the answer to a question that names nothing only
# when its closest sentence (cosine to the question) is within this of the closest document's.
# Chosen on evals/samples, orgdocs and hotpotqa500 together (0.1, 0.15 and 0.2 measured;
# docs/search.md, "Sentences that belong").
CLOSE_TO_BEST = 0.15
# Read by meaning, a sentence of an answer to a question that names nothing ranks higher the closer
# it is to the question: this much score per unit of cosine above ``RELATED`` (a sentence not
# read counts as at ``RELATED``). 0.3 and 0.6 measured on the three sets: the same answers, and
# more of the cited passages from the answering document at 0.3 (docs/search.md).
MEANING_WEIGHT = 0.3


@dataclass(frozen=True)
class Selection:
    """The claims that answer, best first, whether they cover the question, and (when they do
    not) the closest claim found."""

    claims: list[tuple[Claim, str]]
    coverage: Coverage
    closest: list[tuple[Claim, str]]
    candidates: list[tuple[Claim, str]] = field(default_factory=list)
    """The best claims whether or not they cover the question (word coverage cannot judge a
    question in another language than its passages)."""
    links: frozenset[str] = frozenset()
    """Passages the claims need whatever their closeness to the whole question: a second hop's
    (a follow-up round's, or one a kept sentence led to) and a comparison side's."""
    passed: list[tuple[Claim, str, str]] = field(default_factory=list)
    """The ranked claims left out, each with the rule that left it out (for the trace)."""


def passage_claims(finding: Finding, best: Sequence[Passage], drafted: set[str]) -> list[Claim]:
    """Every quotable sentence of the finding's passages among the run's best ``best``: the
    branch drafted a few, but the one that answers may be another (scored here against the
    whole question, not the branch's query)."""
    return [
        Claim(text=sentence, passage_ids=(passage.id,), coverage=0.0)
        for passage in best
        if passage.collection == finding.collection
        for sentence in quotable_sentences(passage)
        if sentence not in drafted
    ]


def _earns_place(focus: QuestionFocus, sentence: str, passage: Passage) -> bool:
    hits = focus.stems(sentence) & focus.weights.keys()
    if len(hits) >= min(2, len(focus.weights)):
        return True
    # One key term and the day or time asked for ("what day … week": "one week long, from
    # Tuesday 10:00") is a sentence that may answer, for a question that names nothing (one that
    # does is answered by sentences about what it names). Not for "when" (a weekday said in
    # passing, "go to the Monday sync", is no answer to "when does the freeze start"), nor a
    # number: numbers are everywhere.
    if hits and focus.asks == "day" and not focus.entities and offers_answer(focus, sentence):
        return True
    return bool(focus.entities) and entity_share(focus, sentence, passage.title) > 0


def _opens(sentence: str, passage: Passage) -> bool:
    """The sentence opens its passage (after a heading line): it usually says what the
    passage's subject is."""
    start = passage.text.find(sentence)
    return start >= 0 and "." not in passage.text[:start]


def _ranked_claims(
    plan: Plan,
    findings: Sequence[Finding],
    pool: Sequence[Passage],
    *,
    from_passages: bool = False,
    aliases: TermAliases | None = None,
    closeness: Closeness | None = None,
) -> tuple[list[tuple[float, Claim, str, Passage]], QuestionFocus]:
    """Claims with one score comparable across collections: how well the sentence answers the
    question (key-term coverage weighted by rarity, the question's entities named), plus a little
    of the cited passage's raw retrieval score relative to the best passage of the whole run, and,
    for a question that names nothing, how close in meaning the sentence is to it (``closeness``,
    ``MEANING_WEIGHT``; a named question's second hop is far in meaning from the whole question).
    Sentences that do not bear on the question are left out. ``pool`` is ``merge_passages(findings)``."""
    by_id = {p.id: p for p in pool}
    focus = focus_of(question_of(plan), pool, extra=[t.collection for t in plan.tasks], aliases=aliases)
    top = max((p.score for p in pool), default=0.0) or 1.0
    # A question in another language than its passages shares no words with them: rank by the
    # drafting's own coverage (the model's queries were in the passages' language) and filter nothing.
    blind = focus.empty or other_language(question_of(plan), findings)
    meaning = closeness if closeness is not None and closeness.cosines and not focus.entities else None
    scored: list[tuple[float, Claim, str, Passage]] = []
    for finding in findings:
        if finding.status != "ok":
            continue
        claims = list(finding.claims)
        if from_passages:
            claims += passage_claims(finding, pool[:PASSAGES_READ], {c.text for c in claims})
        for claim in claims:
            cited = [by_id[pid] for pid in claim.passage_ids if pid in by_id]
            if not cited:
                continue
            passage = max(cited, key=lambda p: p.score)
            retrieval = passage.score / top
            # The passage a follow-up round found about the entity it followed: the second hop of
            # a bridge question, which rarely shares the question's words (see ``_add_followed``).
            hop = finding.round > 1 and bool(finding.entity) and is_about(passage, finding.entity)
            if blind:
                relevance = claim.coverage
            else:
                if not hop and not bears_on(focus, claim.text, passage.title):
                    continue
                relevance = 0.75 * term_coverage(focus, claim.text, passage.title) + 0.25 * entity_share(
                    focus, claim.text, passage.title
                )
            lead = LEAD_BONUS if _opens(claim.text, passage) else 0.0
            offers = ANSWER_BONUS if not blind and offers_answer(focus, claim.text) else 0.0
            score = RELEVANCE_WEIGHT * relevance + (1 - RELEVANCE_WEIGHT) * retrieval + lead + offers
            if meaning is not None:
                cosine = meaning.of(passage.id, claim.text)
                score += MEANING_WEIGHT * ((RELATED if cosine is None else cosine) - RELATED)
            # Drafted claims passed their branch's own cut; a sentence read here must earn its
            # place by carrying two of the question's key terms, or by being about its entity.
            if (
                not hop
                and claim.coverage == 0.0
                and not blind
                and not _earns_place(focus, claim.text, passage)
            ):
                continue
            scored.append((score, claim, finding.collection, passage))
    scored.sort(key=lambda item: -item[0])
    return scored, focus


def _about_side(side: AbstractSet[str], present: AbstractSet[str]) -> bool:
    """A sentence (with its title) is about one side of a comparison when it names most of it."""
    return len(side & present) >= max(1, math.ceil(SIDE_SHARE * len(side)))


def choose_claims(
    plan: Plan,
    findings: Sequence[Finding],
    limits: ResearchLimits,
    *,
    from_passages: bool = False,
    aliases: TermAliases | None = None,
    closeness: Closeness | None = None,
) -> Selection:
    """The claims worth saying, best first: no near-duplicates, none far below the best, and for
    a comparison the best claim about each side (or, without named sides, of each collection the
    asker named).

    With ``closeness`` (``graph.answer.meaning``), meaning decides beside words: evidence whose
    words cover the question answers only when one of its best sentences is related to it by
    meaning (``RELATED``); evidence whose words do not cover it, because the question says
    something in words no retrieved passage writes, answers with the sentences that mean what was
    asked (``ANSWERS``) and name what it names."""
    merged = merge_passages(findings)  # ranked once, read by every step below
    ranked, focus = _ranked_claims(
        plan, findings, merged, from_passages=from_passages, aliases=aliases, closeness=closeness
    )
    if not ranked:  # no sentence carries the question's words; one may still mean what it asks
        # (not for a comparison: one sentence close to the whole question says nothing of a side)
        answering = (
            _answering(focus, closeness, merged, limits.answer_sentences)
            if closeness is not None and plan.kind != "comparative"
            else []
        )
        if answering:
            return Selection(
                claims=with_continuation(answering, merged, limits.answer_sentences),
                coverage=Coverage(found=True),
                closest=[],
            )
        return Selection(
            claims=[], coverage=Coverage(found=False), closest=_closest(focus, closeness, merged)
        )
    floor = RELEVANCE_FLOOR * ranked[0][0]
    kept: list[tuple[Claim, str]] = []
    kept_passages: list[Passage] = []
    kept_stems: list[set[str]] = []
    side_words = [focus.stems(side) for side in plan.sides] if plan.kind == "comparative" else []
    # A comparison without named sides keeps a section for each collection only when the asker
    # named the collections (``in:``): what they compare is then the collections. Routed by
    # itself ("what are the billing plans and their differences"), it compares things inside the
    # evidence, and a collection earns its section as for any question.
    must_collections = (
        {c for _, _, c, _ in ranked}
        if plan.kind == "comparative" and not side_words and plan.routing == "explicit"
        else set()
    )
    must_sides: list[frozenset[str]] = [w for w in side_words if w]
    covered: set[str] = set()
    required: set[str] = set()  # passages of a side's or a named collection's needed sentence
    # With scores on one scale (a search by words and meaning), a collection earns a section only
    # when its evidence is close to the run's best: as close as routing asks of a collection to be
    # searched at all. Searching a collection is no reason to quote it.
    # (Not for a comparison: each side's evidence may stand in its own collection.)
    best_passage = merged[0].score if merged and is_hybrid(merged) and plan.kind != "comparative" else 0.0
    unrelated = closeness.unrelated_collections(merged) if closeness is not None else set()
    hops = {p.id for f in findings if f.round > 1 and f.entity for p in f.passages if is_about(p, f.entity)}
    passed: list[tuple[Claim, str, str]] = []  # each claim left out, and the rule (for the trace)
    for score, claim, collection, passage in _by_novelty(focus, ranked, covered, limits.answer_sentences):
        if (
            best_passage
            and passage.score < limits.routing_ratio * best_passage
            and all(c != collection for _, c in kept)
            and collection not in must_collections
        ):
            passed.append((claim, collection, "far_collection"))
            continue
        # Read by meaning, a collection earns a section only with a sentence related to the
        # question: none of its best passages' sentences is (``unrelated``), or this one, the
        # section's first, is not. A second hop is judged by the chain that led to it, not by its
        # closeness to the whole question.
        if (
            kept
            and all(c != collection for _, c in kept)
            and collection not in must_collections
            and passage.id not in hops
            and (
                collection in unrelated
                or (
                    closeness is not None
                    and (cosine := closeness.of(passage.id, claim.text)) is not None
                    and cosine < RELATED
                )
            )
        ):
            passed.append((claim, collection, "unrelated"))
            continue
        own = stems(claim.text)
        duplicate = next((i for i, other in enumerate(kept_stems) if jaccard(own, other) >= DUPLICATE), None)
        if duplicate is not None:
            merged_ids = tuple(dict.fromkeys(kept[duplicate][0].passage_ids + claim.passage_ids))
            kept[duplicate] = (
                kept[duplicate][0].model_copy(update={"passage_ids": merged_ids}),
                kept[duplicate][1],
            )
            passed.append((claim, collection, "duplicate"))
            continue
        present = focus.stems(claim.text) | focus.stems(passage.title)  # no word spans the join
        side = next((w for w in must_sides if _about_side(w, present)), None)
        needed = side is not None or (
            collection in must_collections and all(c != collection for _, c in kept)
        )
        if not needed and (score < floor or len(kept) >= limits.answer_sentences):
            passed.append((claim, collection, "floor" if score < floor else "enough"))
            continue
        if side is not None:
            must_sides.remove(side)
        if needed:
            required.add(passage.id)
        kept.append((claim, collection))
        kept_passages.append(passage)
        kept_stems.append(own)
        covered |= focus.stems(claim.text) & focus.weights.keys()
    linked = merged[:PASSAGES_READ] if plan.kind != "comparative" else ()
    chosen = {c.text for c, _ in kept}  # before the second hops join them
    add_followed(focus, findings, ranked, kept, kept_passages, kept_stems, linked=linked)
    added = {p.id for (c, _), p in zip(kept, kept_passages, strict=True) if c.text not in chosen}
    # The next link of what was asked: a kept passage and another kept one that names its subject
    # (or whose subject it names) belong together, whatever the closeness of each to the question.
    chain = {p.id for p in kept_passages if any(names_each_other(p, q) for q in kept_passages if q is not p)}
    # A kept sentence that names one of the question's names no sentence before it names carries
    # a part of the ask ("which genus has more species, Bactris or Epigaea"): its passage is needed.
    named: set[tuple[str, ...]] = set()
    parts = set()
    for (claim, _), passage in zip(kept, kept_passages, strict=True):
        said = set(words(passage.title + " " + claim.text))
        fresh = {e for e in focus.entities if e not in named and names_entity(e, said)}
        if fresh and named:
            parts.add(passage.id)
        named |= fresh
    links = frozenset(hops | added | required | chain | parts)
    best = [(claim.text, passage) for (claim, _), passage in zip(kept, kept_passages, strict=True)]
    coverage = assess_coverage(focus, best, merged, comparison=plan.kind == "comparative")
    if plan.kind != "comparative":
        if coverage.found and hop_missing(focus, findings, best, coverage):
            coverage = replace(coverage, found=False, hop_missing=True)
        elif not coverage.found and both_hops(focus, merged[:PASSAGES_READ], coverage):
            coverage = replace(coverage, found=True)
    if closeness is not None and closeness.cosines and plan.kind != "comparative":
        # (Not when the words cover it through an acronym the documents spell out and the
        # embedder cannot read: "how many approvals does a PR touching payments need" and
        # "changes to … payments … need two approvals" are far apart to it.)
        if coverage.found and closeness.best < RELATED and not (aliases and aliases.only_spelled):
            logger.debug("words cover the question, but no sentence is related to it by meaning")
            coverage = replace(coverage, found=False)
        elif not coverage.found and coverage.missing_share > 0 and not coverage.hop_missing:
            # Meaning stands in for words only where words cannot judge: some key term of the
            # question is written in no retrieved passage (the asker's words are not the
            # documents'). Where every one is written, the words' verdict stands: it knows, for
            # one, that a bridge question's second hop is missing, while a first hop's sentence
            # is close in meaning to the whole question.
            answering = _answering(focus, closeness, merged, limits.answer_sentences)
            if answering:
                claims = with_continuation(answering, merged, limits.answer_sentences)
                return Selection(
                    claims=claims,
                    coverage=replace(coverage, found=True),
                    closest=[],
                    candidates=_best(ranked, limits),
                    passed=_left_out([(c, n, "not_covered") for c, n in kept] + passed, claims),
                )
    if coverage.found:
        # A question that names something may be a chain, whose second document is far in
        # meaning from the whole question: its sentences are cut only when the documents write
        # none of its names (a chain through a name no passage writes is none the words follow).
        if closeness is not None and all(focus.written_otherwise(e) for e in focus.entities):
            belong = _documents_that_belong(kept, kept_passages, closeness, merged, keep=links)
            passed[:0] = [(c, n, "far_document") for c, n in kept if (c, n) not in belong]
            kept = belong
        kept = with_continuation(kept, merged, limits.answer_sentences)
        return Selection(
            claims=kept,
            coverage=coverage,
            closest=[],
            candidates=_best(ranked, limits),
            passed=_left_out(passed, kept),
            links=links,
        )
    closest = kept[:1] if coverage.best_coverage >= CLOSEST_COVERAGE else _closest(focus, closeness, merged)
    return Selection(
        claims=[],
        coverage=coverage,
        closest=closest,
        candidates=_best(ranked, limits),
        passed=_left_out([(c, n, "not_covered") for c, n in kept] + passed, closest),
    )


def _left_out(
    passed: Sequence[tuple[Claim, str, str]], used: Sequence[tuple[Claim, str]]
) -> list[tuple[Claim, str, str]]:
    """The claims passed over that the answer does not say after all (a second hop or a
    continuation may be one of them)."""
    said = {claim.text for claim, _ in used}
    return [item for item in passed if item[0].text not in said]


def _documents_that_belong(
    kept: Sequence[tuple[Claim, str]],
    passages: Sequence[Passage],
    closeness: Closeness,
    merged: Sequence[Passage],
    *,
    keep: AbstractSet[str],
) -> list[tuple[Claim, str]]:
    """The kept sentences without those of documents far in meaning from the question: a
    document whose closest sentence read is more than ``CLOSE_TO_BEST`` below the closest kept
    document's, or below ``RELATED``. Words chose them ("days", "leave", "per year" are in many
    policies); meaning says which documents answer. A sentence stays when its document was not
    read, when its passage is in ``keep`` (a second hop: a follow-up round's, or one a kept
    sentence led to), or when its passage and a close one name each other's subject (the next
    link of what was asked)."""
    closest = closeness.closest_by(merged, lambda p: p.doc_id)
    read = [closest[p.doc_id] for p in passages if p.doc_id in closest]
    if not read:
        return list(kept)
    # Another document must be related to the question at all, as a collection's section must.
    bar = max(max(read) - CLOSE_TO_BEST, min(RELATED, max(read)))
    close = [p for p in passages if p.doc_id in closest and closest[p.doc_id] >= bar]
    return [
        (claim, collection)
        for (claim, collection), passage in zip(kept, passages, strict=True)
        if closest.get(passage.doc_id, bar) >= bar
        or passage.id in keep
        or any(names_each_other(passage, other) for other in close)
    ]


def _closest(
    focus: QuestionFocus, closeness: Closeness | None, merged: Sequence[Passage]
) -> list[tuple[Claim, str]]:
    """The sentence closest in meaning to the question, offered under a "not found" when no
    sentence carries enough of its words: one related to the question (``RELATED``) that names
    what it names. People ask in their own words; the passage that answers in the documents'
    words is then shown as what it is, the closest found, and the asker judges."""
    if closeness is None:
        return []
    return _answering(focus, closeness, merged, 1, bar=RELATED)


def _answering(
    focus: QuestionFocus,
    closeness: Closeness,
    merged: Sequence[Passage],
    most: int,
    *,
    bar: float = ANSWERS,
) -> list[tuple[Claim, str]]:
    """The sentences that answer by meaning, closest first, without near-duplicates: each close
    enough to the question (``bar``), and about what it names (the sentence or its passage's
    title names each of the question's entities; a sentence about another film, product or
    person means much the same, and answers nothing). At most ``most`` of them."""
    by_id = {p.id: p for p in merged}
    kept: list[tuple[Claim, str]] = []
    kept_stems: list[set[str]] = []
    for passage_id, sentence, _ in closeness.at_least(bar):
        passage = by_id.get(passage_id)
        own = stems(sentence)
        if (
            passage is None
            or entity_share(focus, sentence, passage.title) < 1.0
            or any(jaccard(own, other) >= DUPLICATE for other in kept_stems)
        ):
            continue
        kept.append((Claim(text=sentence, passage_ids=(passage.id,), coverage=0.0), passage.collection))
        kept_stems.append(own)
        if len(kept) >= most:
            break
    return kept


def _by_novelty(
    focus: QuestionFocus,
    ranked: Sequence[tuple[float, Claim, str, Passage]],
    covered: set[str],
    picks: int,
) -> Iterator[tuple[float, Claim, str, Passage]]:
    """The ranked claims, the first ``picks`` of them chosen one at a time: each time the claim
    whose score, with the key terms already ``covered`` (updated by the caller between picks)
    counting ``COVERED_DISCOUNT`` less, and the question's entities whose words are all covered
    no longer counting for it (a second "created by X and Y" says nothing new about X and Y), is
    highest; then the rest in score order."""
    pending = list(ranked)
    total = focus.total
    hits = [focus.stems(claim.text) & focus.weights.keys() for _, claim, _, _ in pending]
    discount = RELEVANCE_WEIGHT * 0.75 * COVERED_DISCOUNT / total if total else 0.0
    entity_stems = [focus.stems(" ".join(e)) for e in focus.entities]
    per_entity = RELEVANCE_WEIGHT * 0.25 * COVERED_DISCOUNT / len(entity_stems) if entity_stems else 0.0
    # The entities each claim (with its title) names; no word spans the join of the two texts.
    named = [
        [
            i
            for i, e in enumerate(focus.entities)
            if names_entity(e, set(tokens(c.text)).union(tokens(p.title)))
        ]
        if focus.entities
        else []
        for _, c, _, p in pending
    ]

    def novel(i: int) -> float:
        known = sum(1 for e in named[i] if entity_stems[e] and entity_stems[e] <= covered)
        return (
            pending[i][0]
            - discount * math.fsum(focus.weights[s] for s in hits[i] & covered)
            - per_entity * known
        )

    for _ in range(picks):
        if not pending:
            return
        # ``pending`` stays in score order and a claim's novel score is never above its score: the
        # scan stops at the first claim whose score cannot beat the best found (ties keep the first).
        best, best_value = 0, novel(0)
        for i in range(1, len(pending)):
            if pending[i][0] <= best_value:
                break
            value = novel(i)
            if value > best_value:
                best, best_value = i, value
        hits.pop(best)
        named.pop(best)
        yield pending.pop(best)
    yield from pending


def _best(
    ranked: Sequence[tuple[float, Claim, str, Passage]], limits: ResearchLimits
) -> list[tuple[Claim, str]]:
    return [(claim, collection) for _, claim, collection, _ in ranked[: limits.answer_sentences]]


def select_claims(plan: Plan, findings: Sequence[Finding], limits: ResearchLimits) -> list[tuple[Claim, str]]:
    """The claims that answer the question, best first; none when the evidence does not cover it."""
    return choose_claims(plan, findings, limits).claims


def build_answer(
    plan: Plan,
    findings: Sequence[Finding],
    claims: Sequence[tuple[Claim, str]],
    *,
    mode: str = "extractive",
) -> tuple[Answer, int]:
    """Sentences in the order given (best first), each under its collection's heading: a
    collection's section stands where its best sentence ranks and holds its sentences in order, so
    the answer opens with the best sentence and no heading appears twice. Citations are numbered in
    order of first use, and any sentence whose citation is not a supported, retrieved passage is
    dropped. Returns the answer and how many sentences were dropped."""
    retrieved = {p.id: p for f in findings for p in f.passages}
    numbers: dict[str, int] = {}
    citations: list[Citation] = []
    runs: list[tuple[str, list[AnswerSentence]]] = []
    unsupported: list[tuple[Claim, str, str]] = []
    order = {c: rank for rank, c in enumerate(dict.fromkeys(c for _, c in claims))}
    for claim, collection in sorted(claims, key=lambda item: order[item[1]]):  # stable
        cited = [retrieved[pid] for pid in claim.passage_ids if pid in retrieved]
        if not cited or not is_supported(claim.text, (p.text for p in cited)):
            unsupported.append((claim, collection, "unsupported"))
            continue
        refs = []
        for passage in cited:
            if passage.id not in numbers:
                numbers[passage.id] = len(citations) + 1
                # A near-duplicate merged in from another passage is quoted as that passage says it.
                quote = claim.text if claim.text in passage.text else best_quote(claim.text, passage)
                citations.append(Citation(n=numbers[passage.id], passage=passage, quote=quote))
            refs.append(numbers[passage.id])
        sentence = AnswerSentence(text=claim.text, citations=tuple(refs), item=claim.item, code=claim.code)
        if runs and runs[-1][0] == collection:
            runs[-1][1].append(sentence)
        else:
            runs.append((collection, [sentence]))
    dropped = len(unsupported)
    if dropped:
        logger.info("dropped %d unsupported sentences", dropped)
    answer = Answer(
        mode="llm" if mode == "llm" else "extractive",
        kind=plan.kind,
        sections=tuple(AnswerSection(collection=c, sentences=tuple(ss)) for c, ss in runs),
        citations=tuple(citations),
        outcomes=outcomes_of(plan, findings),
        retrieved=merge_passages(findings),
        dropped=dropped + sum(f.dropped for f in findings),
        drop_reasons=tuple(r for f in findings for r in f.drop_reasons),
        passed_over=passed_over(unsupported),
    )
    return answer, dropped


def synthesize_extractive(
    plan: Plan,
    findings: Sequence[Finding],
    limits: ResearchLimits,
    *,
    languages: Collection[str] = (DEFAULT_LANGUAGE,),
    aliases: TermAliases | None = None,
    closeness: Closeness | None = None,
    judged_closeness: Closeness | None = None,
    judges: Judges | None = None,
) -> Answer:
    """The answer, best sentence first; or, when the evidence does not cover the question, no
    answer sentences and the closest sentences found, clearly labelled (and the question's
    language when it is none of ``languages``, the searched collections' documents'). ``aliases``:
    key terms read by meaning, ``closeness``: sentences read by meaning (``graph.answer.meaning``).

    The answer judge (``graph.answer.judge``; ``judges``, the fitted one by default) reads every
    sentence of the best passages (``judged_closeness``: their meanings) and its judgement goes
    with the answer; when the evidence does not cover the question, the sentences it finds most
    likely to answer are the closest shown, or none when nothing found is related."""
    selection = choose_claims(
        plan, findings, limits, from_passages=True, aliases=aliases, closeness=closeness
    )
    merged = merge_passages(findings)
    judged, model = judge_evidence(
        plan, question_of(plan), merged, judged_closeness, aliases=aliases, judges=judges
    )
    judgement = judgement_of(judged, model)
    if selection.coverage.found:
        claims = selection.claims
        # (Only with meanings read: without them the judge reads words alone, and is too weak to
        # add a sentence the checks left out or to cut one they picked.)
        if plan.kind != "comparative" and judged_closeness is not None:
            claims = with_likeliest(claims, judged, judgement)
            claims = concise(claims, judged, judgement, links=selection.links)
        claims = with_introduced(claims, merged, limits.answer_sentences)
        said = {c.text for c, _ in claims}
        padding = [(c, n, "not_answering") for c, n in selection.claims if c.text not in said]
        answer, _ = build_answer(plan, findings, claims)
        return answer.model_copy(
            update={
                "judgement": judgement.model_copy(update={"outcome": "answers"}),
                "passed_over": passed_over([*padding, *selection.passed], first=answer.passed_over),
            }
        )
    if selection.coverage.missing_entities or selection.coverage.missing_terms:
        logger.debug(
            "not covered",
            extra={
                "missing_entities": selection.coverage.missing_entities,
                "missing_terms": selection.coverage.missing_terms,
            },
        )
    # What either reading finds closest is shown: the judge's likeliest sentences first, then the
    # words' closest sentence unless it says the same as one of them.
    shown = as_claims(closest_sentences(judged, judgement))
    for claim, collection in selection.closest:
        if not any(says_the_same(claim.text, c.text) for c, _ in shown):
            shown.append((claim, collection))
    answer, _ = build_answer(plan, findings, with_introduced(shown, merged, limits.answer_sentences))
    closest = tuple(sentence for section in answer.sections for sentence in section.sentences)
    language = detect_language(question_of(plan))
    return answer.model_copy(
        update={
            "sections": (),
            "closest": closest,
            "other_language": language if language not in languages else "",
            "judgement": judgement.model_copy(update={"outcome": "closest" if closest else "nothing"}),
            "passed_over": passed_over(
                selection.passed, first=answer.passed_over, used={s.text for s in closest}
            ),
        }
    )
