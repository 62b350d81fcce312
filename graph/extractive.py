"""Extractive drafting: the sentences of retrieved passages that best cover the question."""

import math
import re
from collections.abc import Sequence

from graph.models import Claim
from retrieval.passages import Passage
from retrieval.text import split_sentences, stem, stems, terms

MIN_WORDS = 5
MAX_WORDS = 80
REDUNDANCY = 0.6
# Sentences about the document itself ("This page explains …") rarely answer a question.
_ABOUT_THE_DOCUMENT = re.compile(
    r"^(this|the following) (page|policy|document|guide|section|handbook|article|chapter)\b", re.IGNORECASE
)
META_PENALTY = 0.6


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def is_heading(sentence: str, title: str) -> bool:
    """A heading line kept in a passage's text for search (the title shows it): not a claim."""
    return sentence[-1:] not in ".!?;:)\"'”" and sentence in title


def term_weights(query: str, passages: Sequence[Passage]) -> dict[str, float]:
    """Inverse document frequency of each query stem over the retrieved passages."""
    query_stems = {stem(t) for t in terms(query)}
    passage_stems = [stems(p.text + " " + p.title) for p in passages]
    n = len(passages) or 1
    return {s: math.log(1 + n / (1 + sum(1 for ps in passage_stems if s in ps))) + 0.1 for s in query_stems}


def draft_claims(query: str, passages: Sequence[Passage], *, limit: int) -> list[Claim]:
    """Up to ``limit`` verbatim sentences chosen greedily by weighted query coverage, with
    diversity: a term already covered counts half, and a near-repeat of a chosen sentence is skipped.

    A sentence scores on its own words plus, at a discount, its passage's title (which carries
    the subject a sentence may refer to as "it").
    """
    weights = term_weights(query, passages)
    total = sum(weights.values())
    if not total or not passages:
        return []
    top_score = max(p.score for p in passages) or 1.0
    candidates: list[tuple[str, set[str], set[str], Passage, float]] = []
    for rank, passage in enumerate(passages):
        title_stems = stems(passage.title) & weights.keys()
        prior = 0.5 * (passage.score / top_score) + 0.5 / (1 + rank)
        for sentence in split_sentences(passage.text):
            count = len(sentence.split())
            if count < MIN_WORDS or count > MAX_WORDS:
                continue
            if is_heading(sentence, passage.title):
                continue
            own = stems(sentence)
            if not own & weights.keys():
                continue
            candidates.append((sentence, own, title_stems, passage, prior))
    chosen: list[Claim] = []
    chosen_stems: list[set[str]] = []
    covered: set[str] = set()
    first_value = 0.0
    while candidates and len(chosen) < limit:
        best_index, best_value, best_coverage = -1, 0.0, 0.0
        for index, (_, own, title_stems, _, prior) in enumerate(candidates):
            if any(jaccard(own, other) >= REDUNDANCY for other in chosen_stems):
                continue
            hits = own & weights.keys()
            coverage = (
                sum(weights[s] for s in hits) + 0.5 * sum(weights[s] for s in title_stems - hits)
            ) / total
            novelty = sum(weights[s] * (0.5 if s in covered else 1.0) for s in hits) / total
            value = 0.6 * novelty + 0.15 * coverage + 0.25 * prior
            if _ABOUT_THE_DOCUMENT.match(candidates[index][0]):
                value *= META_PENALTY
            if value > best_value:
                best_index, best_value, best_coverage = index, value, coverage
        if best_index < 0 or best_value < 0.5 * first_value:
            break
        first_value = first_value or best_value
        sentence, own, _, passage, _ = candidates.pop(best_index)
        chosen.append(Claim(text=sentence, passage_ids=(passage.id,), coverage=round(best_coverage, 4)))
        chosen_stems.append(own)
        covered |= own & weights.keys()
    return chosen
