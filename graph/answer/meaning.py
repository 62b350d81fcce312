"""Key terms read by meaning: when no retrieved passage writes a word of the question, which of
their words mean it.

People ask in their own words ("vacation days", "the christmas freeze") and documents write theirs
("paid time off … public holidays", "the year-end freeze from December 20"). Whether the evidence
answers is decided from which of the question's key terms the sentences carry
(``graph.answer.relevance``); a term that no retrieved passage writes at all would count as missing
however well the passage answers. For each such term, the embedder the search uses compares it
with the words and word pairs of the best passages; the closest one, when it is close enough,
stands for the term. A question about something the documents do not hold keeps its missing term:
"Berlin" is nearest to "country" in a passage about time off, far below the bar.
"""

from collections.abc import Sequence

import numpy as np

from graph.research.question import key_terms
from retrieval.backends import SearchBackend
from retrieval.language import FUNCTION_WORDS, detect_language, stem_in, stem_tuple_in
from retrieval.passages import Passage
from retrieval.text import words

# How close a passage's word (or pair of words) must be to a key term to stand for it: the cosine
# of their all-MiniLM-L6-v2 vectors, chosen on evals/samples, orgdocs and hotpotqa500 together
# (0.6, 0.65 and 0.7 measured; docs/search.md, "Answering in the asker's words").
SAME_MEANING = 0.65
PASSAGES_READ = 3  # the best passages whose words are compared
MAX_CANDIDATES = 400  # words and pairs embedded for one question at most


def _candidates(passages: Sequence[Passage], language: str) -> list[str]:
    """The content words of the passages and their adjacent pairs, each once, in reading order."""
    function_words = FUNCTION_WORDS.get(language, frozenset())
    seen: dict[str, None] = {}
    for passage in passages:
        content = [
            w for w in words(f"{passage.title} {passage.text}") if w not in function_words and w.isalpha()
        ]
        for i, word in enumerate(content):
            seen.setdefault(word, None)
            if i + 1 < len(content):
                seen.setdefault(f"{word} {content[i + 1]}", None)
            if len(seen) >= MAX_CANDIDATES:
                return list(seen)
    return list(seen)


async def term_aliases(
    question: str, passages: Sequence[Passage], backend: SearchBackend
) -> dict[str, frozenset[str]]:
    """Each key stem of ``question`` that no passage writes, with the stems of the passage words
    that mean it; ``{}`` when every key term is written, or the search has no embedder."""
    language = detect_language(question)
    function_words = FUNCTION_WORDS.get(language, frozenset())
    written: set[str] = set()
    for passage in passages:
        written.update(stem_tuple_in(passage.text, language))
        written.update(stem_tuple_in(passage.title, language))
    absent = {
        stem_in(t, language): t
        for t in key_terms(question)
        if t not in function_words and t.isalpha() and stem_in(t, language) not in written
    }
    candidates = _candidates(passages[:PASSAGES_READ], language) if absent else []
    if not candidates:
        return {}
    vectors = await backend.meanings([*absent.values(), *candidates])
    if vectors is None:
        return {}
    terms, found = vectors[: len(absent)], vectors[len(absent) :]
    similarity = terms @ found.T  # unit vectors: cosines
    aliases: dict[str, frozenset[str]] = {}
    for row, key in enumerate(absent):
        best = int(np.argmax(similarity[row]))
        if similarity[row, best] >= SAME_MEANING:
            stems = frozenset(stem_tuple_in(candidates[best], language))
            if stems:
                aliases[key] = stems
    return aliases
