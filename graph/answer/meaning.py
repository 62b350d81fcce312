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

Whether a sentence answers is read by meaning too (``sentence_closeness``): each quotable sentence
of the run's best passages, with its passage's title, is compared with the question as a whole.
A sentence that means what was asked answers it in any words ("who do I wake up if the site dies"
and "the primary on-call engineer is paged"); evidence whose words match the question's but whose
sentences all mean something else ("how do I set up the VPN" and "connect through the company VPN
on hotel networks") does not. A question in the text (an FAQ's) is not read, and the sentence
after it is read with it, as a sentence is read with its title.
"""

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

import numpy as np

from graph.answer.extractive import MAX_WORDS, MIN_WORDS, is_heading_in, is_question
from graph.research.question import key_terms
from retrieval.backends import SearchBackend
from retrieval.embeddings import Vectors
from retrieval.language import FUNCTION_WORDS, detect_language, stem_in, stem_tuple_in
from retrieval.names import acronyms_in, expansion_of
from retrieval.passages import Passage
from retrieval.text import sentence_analysis, words

# How close a passage's word (or pair of words) must be to a key term to stand for it: the cosine
# of their all-MiniLM-L6-v2 vectors, chosen on evals/samples, orgdocs and hotpotqa500 together
# (0.6, 0.65 and 0.7 measured; docs/search.md, "Answering in the asker's words").
SAME_MEANING = 0.65
PASSAGES_READ = 3  # the best passages whose words (and sentences) are compared
MAX_CANDIDATES = 400  # words and pairs embedded for one question at most

# How close (cosine of all-MiniLM-L6-v2 vectors of the question and of "title: sentence") a
# sentence must be to answer the question by meaning when its words do not carry the question's,
# and how close one sentence of the best passages must be for evidence whose words do carry them
# to answer at all. Chosen on evals/samples, orgdocs and hotpotqa500 together (docs/search.md,
# "Whether the evidence answers, by meaning").
ANSWERS = 0.55
RELATED = 0.40
MAX_SENTENCES = 60  # sentences embedded for one question at most
SENTENCE_PASSAGES = 10  # the best passages whose sentences the answer judge reads


@dataclass(frozen=True)
class Closeness:
    """How close in meaning each quotable sentence of the run's best passages is to the question:
    cosines by (passage id, sentence), and the question's vector they were measured against (so
    more sentences are read without embedding the question again)."""

    cosines: Mapping[tuple[str, str], float]
    question: Vectors = field(compare=False, repr=False)

    @property
    def best(self) -> float:
        return max(self.cosines.values(), default=0.0)

    def of(self, passage_id: str, sentence: str) -> float | None:
        return self.cosines.get((passage_id, sentence))

    def closest_by(self, passages: Sequence[Passage], group: Callable[[Passage], str]) -> dict[str, float]:
        """The closest sentence read of each group (``group(passage)``: its collection, its
        document) of these passages; groups none of whose sentences was read are left out."""
        group_of = {p.id: group(p) for p in passages}
        closest: dict[str, float] = {}
        for (passage_id, _), cosine in self.cosines.items():
            if passage_id in group_of:
                name = group_of[passage_id]
                closest[name] = max(closest.get(name, cosine), cosine)
        return closest

    def unrelated_collections(self, passages: Sequence[Passage]) -> set[str]:
        """The collections of the read passages none of whose sentences is related to the question."""
        closest = self.closest_by(passages, lambda p: p.collection)
        return {name for name, cosine in closest.items() if cosine < RELATED}

    def at_least(self, bar: float) -> list[tuple[str, str, float]]:
        """The sentences at least ``bar`` close to the question (``ANSWERS``: close enough to
        answer by themselves; ``RELATED``: related to it), closest first (ties in reading order)."""
        close = [(pid, s, c) for (pid, s), c in self.cosines.items() if c >= bar]
        return sorted(close, key=lambda item: -item[2])


def quotable_sentences(passage: Passage) -> list[str]:
    """The sentences of a passage an answer may quote: not a heading line, of a sentence's length."""
    return [
        sentence
        for sentence, _, length in sentence_analysis(passage.text)[0]
        if MIN_WORDS <= length <= MAX_WORDS
        and not is_heading_in(sentence, passage)
        and not is_question(sentence)
    ]


def candidates(passages: Sequence[Passage]) -> list[tuple[Passage, str]]:
    """The sentences the answer judge reads: the quotable sentences of the best
    ``SENTENCE_PASSAGES`` passages, in rank and reading order, at most ``MAX_SENTENCES``."""
    pairs: list[tuple[Passage, str]] = []
    for passage in passages[:SENTENCE_PASSAGES]:
        pairs += [(passage, s) for s in quotable_sentences(passage)]
    return pairs[:MAX_SENTENCES]


async def sentence_closeness(
    question: str, passages: Sequence[Passage], backend: SearchBackend
) -> Closeness | None:
    """How close in meaning each quotable sentence of the best ``passages`` (the first
    ``PASSAGES_READ``) is to ``question``; ``None`` when the search has no embedder or nothing is
    quotable."""
    pairs: list[tuple[Passage, str]] = []
    for passage in passages[:PASSAGES_READ]:
        pairs += [(passage, s) for s in quotable_sentences(passage)]
    pairs = pairs[:MAX_SENTENCES]
    if not pairs or not question.strip():
        return None
    vectors = await backend.meanings([question, *_texts(pairs)])
    if vectors is None:
        return None
    return _with(Closeness({}, vectors[0]), pairs, vectors[1:])


async def read_also(
    closeness: Closeness, pairs: Sequence[tuple[Passage, str]], backend: SearchBackend
) -> Closeness:
    """``closeness`` with these sentences (of passages beyond the best, that an answer quotes)
    read too; unchanged when the search cannot read them."""
    unread = [(p, s) for p, s in pairs if closeness.of(p.id, s) is None]
    vectors = await backend.meanings(_texts(unread)) if unread else None
    return closeness if vectors is None else _with(closeness, unread, vectors)


def _texts(pairs: Sequence[tuple[Passage, str]]) -> list[str]:
    """What is embedded for a sentence: with its passage's title, which says what "it" is, and in
    a list of questions and answers with the question it answers, which says what it is about."""
    texts = []
    for passage, sentence in pairs:
        asked = _questions_answered(passage.text).get(sentence)
        read = f"{asked} {sentence}" if asked else sentence
        texts.append(f"{passage.title}: {read}" if passage.title else read)
    return texts


@lru_cache(maxsize=1024)
def _questions_answered(text: str) -> dict[str, str]:
    """Each sentence of ``text`` that follows a question (an FAQ's), with that question."""
    sentences = [sentence for sentence, _, _ in sentence_analysis(text)[0]]
    return {
        sentence: previous
        for previous, sentence in pairwise(sentences)
        if is_question(previous) and not is_question(sentence)
    }


def _with(closeness: Closeness, pairs: Sequence[tuple[Passage, str]], vectors: Vectors) -> Closeness:
    cosines = dict(closeness.cosines)
    for (passage, sentence), cosine in zip(pairs, vectors @ closeness.question, strict=True):
        key = (passage.id, sentence)
        cosines[key] = max(cosines.get(key, -1.0), float(cosine))
    return Closeness(cosines, closeness.question)


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


class TermAliases(Mapping[str, frozenset[str]]):
    """Key stems of a question that no retrieved passage writes, each with the stems of the
    passage words that stand for it: read by meaning (``meant``), or the words whose initials
    spell it as an acronym (``spelled``)."""

    def __init__(
        self,
        meant: Mapping[str, frozenset[str]] | None = None,
        spelled: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.meant: Mapping[str, frozenset[str]] = dict(meant or {})
        self.spelled: Mapping[str, frozenset[str]] = dict(spelled or {})
        self._all = {**self.meant, **self.spelled}

    def __getitem__(self, key: str) -> frozenset[str]:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __repr__(self) -> str:
        return f"TermAliases(meant={dict(self.meant)!r}, spelled={dict(self.spelled)!r})"

    @property
    def only_spelled(self) -> bool:
        """Every alias is an acronym's spelling: words the embedder did not choose. It reads "EU"
        as "European Union" but "PR" as nothing in particular, so it is no judge of how close a
        sentence is to a question that asks through such an acronym."""
        return bool(self.spelled) and not self.meant


async def term_aliases(question: str, passages: Sequence[Passage], backend: SearchBackend) -> TermAliases:
    """Each key stem of ``question`` that no passage writes, with the stems of the passage words
    that mean it: the closest in meaning, and for an acronym nothing is close to, the words that
    spell it out ("pull request" for "PR", ``expansion_of``); empty when every key term is
    written, or nothing means or spells one (without an embedder, only acronyms are read)."""
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
    aliases = await _meant(absent, passages, language, backend)
    unread = {key: term for key, term in absent.items() if key not in aliases}
    return TermAliases(aliases, _spelled_out(question, unread, passages, language))


async def _meant(
    absent: Mapping[str, str], passages: Sequence[Passage], language: str, backend: SearchBackend
) -> dict[str, frozenset[str]]:
    """The absent key stems with the stems of the best passages' word or word pair closest in
    meaning to them, when it is close enough (``SAME_MEANING``)."""
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


def _spelled_out(
    question: str, absent: Mapping[str, str], passages: Sequence[Passage], language: str
) -> dict[str, frozenset[str]]:
    """The absent key stems the question writes as an acronym ("PR", or "PRs"), or in lower case
    where a whole title or heading spells them ("pto": "Paid time off"), with the stems of the
    words the passages spell them out with (``expansion_of``), each passage counting once
    more for each other thing the question asks that it says: "PR" in "how many approvals does a
    PR touching payments need" is what the passage on approvals and payments spells with "p" and
    "r" ("pull request"), not what one on production access does ("production: read")."""
    written = set(acronyms_in(question))
    typed_lower = set(_LOWER_WORD_RE.findall(question))
    asked: dict[str, tuple[str, bool]] = {}  # key -> (acronym, spelled only by a whole phrase)
    for key, term in absent.items():
        if acronym := _acronym(term, written):
            asked[key] = (acronym, False)
        elif term in typed_lower:
            # Typed in lower case ("pto"), it may be an acronym or a word of its own: only a title
            # or heading whose initials are its letters ("Paid time off") spells it.
            asked[key] = (term, True)
    if not asked:
        return {}
    others = {stem_in(t, language) for t in key_terms(question)} - absent.keys()
    texts = [f"{p.title}. {p.text}" for p in passages]
    weights = [
        1.0 + len(others & (set(stem_tuple_in(p.text, language)) | set(stem_tuple_in(p.title, language))))
        for p in passages
    ]
    aliases: dict[str, frozenset[str]] = {}
    for key, (acronym, whole) in asked.items():
        spelled = expansion_of(acronym, texts, weights, whole=whole)
        stems = frozenset(stem_tuple_in(spelled, language)) if spelled else frozenset()
        if stems:
            aliases[key] = stems
    return aliases


# A word typed in lower case of an acronym's length.
_LOWER_WORD_RE = re.compile(r"\b[a-z]{2,6}\b")


def _acronym(term: str, written: AbstractSet[str]) -> str:
    """The acronym a key term is, as the question writes it in capitals ("prs" is "PRs"), or ""."""
    if term in written:
        return term
    return term[:-1] if term.endswith("s") and term[:-1] in written else ""
