"""Extractive drafting: the sentences of retrieved passages that best cover the question."""

import math
import re
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from graph.models import Claim
from retrieval.language import DEFAULT_LANGUAGE, NOUNS_CAPITALISED, detect_language
from retrieval.passages import Passage
from retrieval.text import sentence_analysis, stem, stems, terms

MIN_WORDS = 5
MAX_WORDS = 80
REDUNDANCY = 0.6
# Sentences about the document itself ("This page explains …") rarely answer a question.
_ABOUT_THE_DOCUMENT = re.compile(
    r"^(this|the following) (page|policy|document|guide|section|handbook|article|chapter)\b", re.IGNORECASE
)
META_PENALTY = 0.6


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # the size of a | b, without building it


# A word a line written as a heading capitalises: every word of four letters or more ("with",
# "from" and shorter words may stay in lower case in a title).
_LONG_WORD = re.compile(r"[^\W\d_][\w'’-]{3,}")


# A Markdown link or image: "[text](address)", "![alt](address)".
_MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\([^)\s]*\)")


# A line of this many words of four letters or more, this share of them capitalised, is a row of
# links or headings though a word in it is in lower case, unless it lists them as a sentence lists
# things, between commas ("Supported browsers include Google Chrome, Mozilla Firefox, …").
_LIST_MARK = re.compile(r"[,;:]")
MENU_WORDS = 8
MENU_SHARE = 0.8
# A key with a number for its value ("Annual Leave Allowance: 25 Days"), and a table row.
_VALUE = re.compile(r":\s.*\d|^\|.*\|$")


def is_heading(sentence: str, title: str, language: str = DEFAULT_LANGUAGE) -> bool:
    """A heading line kept in a passage's text for search (the title shows it), a line of links and
    nothing else, or a line written as a heading: without end punctuation, with two or more words
    of four letters or more, every one capitalised, and neither a key with a number for its value
    nor a table row ("Annual Leave Allowance: 25 Days" is a claim); not in a language that
    capitalises every noun (``language``). Those are a scraped page's section headings and
    navigation links ("Places to Launch Your Boat", "Kolb House | Dublin, CA - Official Website").
    Not a claim."""
    if "](" in sentence and not any(ch.isalpha() for ch in _MARKDOWN_LINK.sub("", sentence)):
        return True
    if sentence[-1:] in ".!?;:)\"'”":
        return False
    if sentence in title:
        return True
    if language in NOUNS_CAPITALISED or _VALUE.search(sentence):
        return False
    long_words = _LONG_WORD.findall(sentence)
    capitalised = sum(w[0].isupper() for w in long_words)
    # A menu may hold a word or two in lower case ("All categories Bus Capital Projects …").
    return len(long_words) >= 2 and (
        capitalised == len(long_words)
        or (
            len(long_words) >= MENU_WORDS
            and capitalised >= MENU_SHARE * len(long_words)
            and not _LIST_MARK.search(sentence)
        )
    )


def is_heading_in(sentence: str, passage: Passage) -> bool:
    """``is_heading`` in the passage's language, detected only for a line that reads as a heading
    in English (most lines do not, and detecting costs a pass over the passage)."""
    return is_heading(sentence, passage.title) and is_heading(
        sentence, passage.title, detect_language(passage.text)
    )


# An FAQ's question marked as one, whether or not it is worded as a question ("Q: I am not a
# citizen of the United States.").
_MARKED_QUESTION = re.compile(r"Q\s?[.:]\s")


def is_question(sentence: str) -> bool:
    """A question in the text (an FAQ's, a heading's): it says nothing, so it answers nothing,
    however close to the asker's question it is."""
    return sentence.rstrip("\"'”)").endswith("?") or _MARKED_QUESTION.match(sentence) is not None


def draft_claims(query: str, passages: Sequence[Passage], *, limit: int) -> list[Claim]:
    """Up to ``limit`` verbatim sentences chosen greedily by weighted query coverage, with
    diversity: a term already covered counts half, and a near-repeat of a chosen sentence is skipped.

    A sentence scores on its own words plus, at a discount, its passage's title (which carries
    the subject a sentence may refer to as "it").

    Each passage is split and stemmed once (``sentence_analysis``, cached per text): its
    sentences' stems serve both the term weights and the candidates.
    """
    query_stems = {stem(t) for t in terms(query)}
    analysed = [(passage, *sentence_analysis(passage.text), stems(passage.title)) for passage in passages]
    # Each query stem's weight: its inverse document frequency over these passages (text and title
    # together), from the query stems each passage's cached stems hold.
    found: list[str] = []  # each passage's query stems, counted once at the end
    for _, _, text_stems, title in analysed:
        found.extend(query_stems.intersection(text_stems).union(query_stems & title))
    counts = Counter(found)
    n = len(analysed) or 1
    weights = {s: math.log(1 + n / (1 + counts[s])) + 0.1 for s in query_stems}
    total = math.fsum(weights.values())
    if not total or not passages:
        return []
    top_score = max(p.score for p in passages) or 1.0
    # What does not change between picks is computed once per sentence: its query stems (hits),
    # its coverage, its prior (passage score and rank) and whether it is about the document itself.
    # ``bound`` is a sentence's value while none of its hits is covered yet, and never less than
    # its value later: the novelty sums the same weights, some halved, and
    # exactly rounded sums (``math.fsum``) and products of non-negative terms are monotone. A pick skips every
    # sentence whose bound cannot beat the best value so far, and a sentence none of whose hits is
    # covered is worth exactly its bound. Only sentences with hits become candidates.
    candidates: list[tuple[str, Sequence[str], AbstractSet[str], float, float, bool, Passage, float]] = []
    weight = weights.__getitem__  # summed through ``map``: cheaper than a generator per sentence
    for rank, (passage, sentences, _, title) in enumerate(analysed):
        title_stems = title & weights.keys()
        prior = 0.5 * (passage.score / top_score) + 0.5 / (1 + rank)
        for sentence, sentence_stems, length in sentences:
            if not MIN_WORDS <= length <= MAX_WORDS:
                continue
            hits: AbstractSet[str] = query_stems.intersection(sentence_stems)
            if not hits:
                continue
            if is_heading_in(sentence, passage) or is_question(sentence):
                continue
            gain = math.fsum(map(weight, hits))
            # Most titles carry no query stem: their half-weighted sum (0.0) is not added.
            titled = 0.5 * math.fsum(map(weight, title_stems - hits)) if title_stems else 0.0
            coverage = (gain + titled) / total
            meta = sentence[:1] in "tT" and _ABOUT_THE_DOCUMENT.match(sentence) is not None
            bound = 0.6 * (gain / total) + 0.15 * coverage + 0.25 * prior
            if meta:
                bound *= META_PENALTY
            candidates.append((sentence, sentence_stems, hits, coverage, prior, meta, passage, bound))
    chosen: list[Claim] = []
    chosen_stems: list[frozenset[str]] = []
    covered: set[str] = set()
    first_value = 0.0
    while candidates and len(chosen) < limit:
        best_index, best_value, best_coverage = -1, 0.0, 0.0
        for index, (_, _, hits, coverage, prior, meta, _, bound) in enumerate(candidates):
            if bound <= best_value:
                continue  # its value is at most its bound: it cannot be the best
            if covered and not covered.isdisjoint(hits):
                novelty = math.fsum(weights[s] * (0.5 if s in covered else 1.0) for s in hits) / total
                value = 0.6 * novelty + 0.15 * coverage + 0.25 * prior
                if meta:
                    value *= META_PENALTY
            else:
                value = bound
            if value > best_value:
                best_index, best_value, best_coverage = index, value, coverage
        if best_index < 0:
            break
        own = frozenset(candidates[best_index][1])
        if any(jaccard(own, other) >= REDUNDANCY for other in chosen_stems):
            # A near-repeat of a chosen sentence is never chosen: tested when it would be the pick
            # (the same picks as dropping every near-repeat when a sentence is chosen, without
            # comparing every candidate).
            candidates.pop(best_index)
            continue
        if best_value < 0.5 * first_value:
            break
        first_value = first_value or best_value
        sentence, _, hits, _, _, _, passage, _ = candidates.pop(best_index)
        chosen.append(Claim(text=sentence, passage_ids=(passage.id,), coverage=round(best_coverage, 4)))
        chosen_stems.append(own)
        covered |= hits
    return chosen
