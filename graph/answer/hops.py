"""A bridge question's two hops: the first passage names what the second is about ("the director
of the film that …": the film's passage names its director, whose own passage holds the answer).
The answer keeps the second hop's sentence right after the one that leads to it; the evidence is
"not found" when only the first hop was reached, and found when two of the best passages together
carry what neither carries alone."""

import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from graph.answer.compose import DUPLICATE
from graph.answer.evidence import names_each_other
from graph.answer.extractive import jaccard
from graph.answer.relevance import (
    ANSWER_BONUS,
    MAX_MISSING_SHARE,
    Coverage,
    QuestionFocus,
    entity_share,
    names_entity,
    offers_answer,
    term_coverage,
)
from graph.models import Claim, Finding
from graph.research.reflect import is_about
from retrieval.names import mentions
from retrieval.passages import Passage
from retrieval.text import stems, words

# Passages added after a kept sentence that names their subject (a bridge's second hop).
MAX_HOPS = 2
# A question other than a comparison whose kept sentences make no hop (none leads to another's
# passage) is "not found" unless a retrieved passage carries this share of the ask by itself.
HOP_PASSAGE_COVERAGE = 0.6
# Both hops of a bridge question found: two of the run's best passages, one naming the other's
# subject, that together name every entity of the question and carry this share of the ask.
HOP_PAIR_COVERAGE = 0.5
# ... and each hop must add to the other: the pair carries more of the ask than either passage.
HOP_PAIR_GAIN = 0.15


def hop_missing(
    focus: QuestionFocus, findings: Sequence[Finding], best: Sequence[tuple[str, Passage]], coverage: Coverage
) -> bool:
    """A bridge question's second hop is missing: a research round followed up an entity (the
    bridge) that a kept sentence about one of the question's own entities names (the first hop),
    and no retrieved passage is about it; no kept sentence leads to another kept passage (it
    names that passage's subject, or either passage names the other's); and no retrieved passage
    carries most of the ask by itself (``HOP_PASSAGE_COVERAGE``). What was found is then only
    the first hop."""
    if not focus.entities or coverage.passage_coverage >= HOP_PASSAGE_COVERAGE:
        return False
    followed = dict.fromkeys(f.entity for f in findings if f.round > 1 and f.entity)
    first_hops = [
        text
        for text, passage in best
        if any(names_entity(e, set(words(passage.title + " " + text))) for e in focus.entities)
    ]
    bridges = [e for e in followed if any(mentions(text, e) for text in first_hops)]
    retrieved = [p for f in findings for p in f.passages]
    if not any(not any(is_about(p, entity) for p in retrieved) for entity in bridges):
        return False
    for text, passage in best:
        for _, other in best:
            if other.id == passage.id:
                continue
            subject = subject_of(other)
            if len(subject) > 2 and mentions(text, subject):
                return False
            if names_each_other(passage, other):
                return False
    return True


def both_hops(focus: QuestionFocus, best: Sequence[Passage], coverage: Coverage) -> bool:
    """The evidence answers a bridge question whose entity is named only inside a passage (so no
    passage is *about* it) or whose ask is split over two passages (so no sentence carries
    enough of it): a passage among the run's ``best`` names another one's subject (the first hop
    leads to the second), and the two together name every entity of the question and carry
    ``HOP_PAIR_COVERAGE`` of its key terms, more than either carries alone (``HOP_PAIR_GAIN``).
    Never when an entity is named by no retrieved passage, when too much of the ask is absent
    from them all, or when the question has no key term."""
    if coverage.unnamed_entities or coverage.missing_share >= MAX_MISSING_SHARE or not focus.total:
        return False
    for first in best:
        for second in best:
            subject = subject_of(second)
            if second.id == first.id or len(subject) <= 2 or not mentions(first.text, subject):
                continue
            text = f"{first.text} {second.text}"
            titles = f"{first.title} {second.title}"
            if entity_share(focus, f"{titles} {text}") < 1.0:
                continue
            joint = term_coverage(focus, text, titles)
            alone = max(term_coverage(focus, p.text, p.title) for p in (first, second))
            if joint >= HOP_PAIR_COVERAGE and joint - alone > HOP_PAIR_GAIN:
                return True
    return False


def add_followed(
    focus: QuestionFocus,
    findings: Sequence[Finding],
    ranked: Sequence[tuple[float, Claim, str, Passage]],
    kept: list[tuple[Claim, str]],
    kept_passages: list[Passage],
    kept_stems: list[set[str]],
    *,
    linked: Sequence[Passage] = (),
) -> None:
    """The second hop of a bridge question. When a kept sentence names an entity a research round
    followed up, the best sentence of the passage about it is kept right after it (it rarely
    shares the question's words, yet it holds the answer). When a kept sentence names the subject
    of one of the ``linked`` passages (the run's best), that passage's sentence carrying most of
    what the kept sentences leave out of the question (and the kind of thing it asks for) follows
    it; at most ``MAX_HOPS`` of these."""
    followed = dict.fromkeys(f.entity for f in findings if f.round > 1 and f.entity and f.status == "ok")
    targets: list[tuple[str, Passage | None]] = [(entity, None) for entity in followed]
    targets += [(subject, p) for p in linked if len(subject := subject_of(p)) > 2]
    original = {c.text for c, _ in kept}
    added = 0
    for entity, about in targets:
        if about is not None and added >= MAX_HOPS:
            break
        named = next(
            (
                i
                for i, ((c, _), p) in enumerate(zip(kept, kept_passages, strict=True))
                if c.text in original
                and (about is None or p.id != about.id)  # a passage naming its own subject is no hop
                and mentions(c.text, entity)
            ),
            None,
        )
        if named is None:
            continue
        if about is None and any(is_about(p, entity) for p in kept_passages):
            continue
        fresh = [
            (score, claim, collection, passage)
            for score, claim, collection, passage in ranked
            if (is_about(passage, entity) if about is None else passage.id == about.id)
            and all(jaccard(stems(claim.text), other) < DUPLICATE for other in kept_stems)
        ]
        # What the hop adds to the sentence that leads to it: the rest of the ask.
        covered = focus.stems(kept[named][0].text) & focus.weights.keys()
        hop = _completing(focus, fresh, covered)
        if hop is None and about is None and fresh:
            hop = fresh[0]
        if hop is None:
            continue
        _, claim, collection, passage = hop
        added += about is not None
        kept.insert(named + 1, (claim, collection))
        kept_passages.insert(named + 1, passage)
        kept_stems.insert(named + 1, stems(claim.text))


def _completing(
    focus: QuestionFocus, ranked: Sequence[tuple[float, Claim, str, Passage]], covered: AbstractSet[str]
) -> tuple[float, Claim, str, Passage] | None:
    """The claim carrying most of the key terms not yet ``covered`` (and, as a tie-breaker, what
    the question asks for); none when no claim carries any of them."""
    best: tuple[float, Claim, str, Passage] | None = None
    best_gain = 0.0
    for item in ranked:
        new = (focus.stems(item[1].text) & focus.weights.keys()) - covered
        gain = math.fsum(focus.weights[s] for s in new)
        if gain <= 0:
            continue
        gain += ANSWER_BONUS * focus.total * offers_answer(focus, item[1].text)
        if gain > best_gain:
            best, best_gain = item, gain
    return best


def subject_of(passage: Passage) -> str:
    """What a passage is about, from its title (without a parenthesis or a comma's qualifier)."""
    return passage.title.split(" (", 1)[0].split(",", 1)[0].strip()
