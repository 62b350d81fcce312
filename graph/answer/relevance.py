"""How well a sentence answers the question, and whether the evidence answers it at all.

A question's *key terms* are its content words minus the words that only shape the ask ("how
many", "which one"); its *key entities* are the names it mentions (capitalized runs, quoted
titles, numbers). A sentence answers better the more of the key terms it carries, weighted by how
rare each is among the passages retrieved for this question (a word every passage has says little),
and the more of the key entities it (or its passage's title) names. The evidence *covers* the
question when the passages behind the best sentences name every key entity and the best sentence
carries enough of the key terms; otherwise Confer says plainly that it found nothing that answers.
"""

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from graph.research.question import AnswerType, expected_answer, key_entities, key_terms
from retrieval.language import DEFAULT_LANGUAGE, FUNCTION_WORDS, detect_language, stem_in, stem_tuple_in
from retrieval.names import name_words
from retrieval.passages import Passage
from retrieval.text import tokens, words

# The best sentence must carry at least this share of the question's key-term weight (its own
# words, plus its passage title at half weight) for the evidence to count as answering.
MIN_TERM_COVERAGE = 0.35
# A key term whose weight is at least this share of the total is central to the ask: when no
# retrieved passage has it at all, the documents do not answer the question.
CENTRAL_TERM_SHARE = 0.2
# A comparison is answered by two sentences (one a side): together they must carry this share.
MIN_JOINT_COVERAGE = 0.4
# Not covered when the key terms that no retrieved passage has make up this share of the weight.
MAX_MISSING_SHARE = 0.5
# How much of the ask the best sentences carry together (a comparison's two sides).
JOINT_SENTENCES = 2
# The question's entities must be what retrieved passages are *about* (their title or the opening
# of their text names it), not only mentioned in passing: a paragraph naming "Big Stone Gap" is no
# evidence about the film when the film's own paragraph is missing. For a comparison, the
# entities weighing at least this share of the entities' key-term weight must be such subjects.
MIN_SUBJECT_SHARE = 0.5
# For other questions, the subject share plus the best passage's key-term coverage must reach
# this (either may compensate the other: a question whose entity is named only inside the
# answering passage, as a stage name or a formula, still counts when that passage covers the ask).
MIN_SUBJECT_AND_PASSAGE = 0.75
# A passage is about an entity its text names within this many words more than the entity has.
OPENING_SLACK = 3
# A sentence holding what the question asks for (a date for "when", a number for "how many", a
# name for "who"), beyond what the question says, is likelier to answer it.
ANSWER_BONUS = 0.1
# How many of the best retrieved passages are read for their coverage of the ask.
PASSAGES_COVERING = 10


@dataclass(frozen=True)
class QuestionFocus:
    """What the question asks about, with weights from this run's retrieved passages."""

    weights: dict[str, float]  # key-term stem -> weight
    entities: tuple[tuple[str, ...], ...]  # each entity's content words (lower case)
    language: str = DEFAULT_LANGUAGE  # the question's; its stemmer is used on both sides
    asks: AnswerType = "any"  # what the question asks for (English questions only)
    question_words: frozenset[str] = frozenset()  # the question's own words (lower case)
    # Key stems no retrieved passage writes, each with the stems of the passages' words that mean
    # it (``graph.answer.meaning``): a text with those words carries the key term.
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The stems of each text this question's synthesis reads (a sentence is read by several
    # checks): computed once per text and question, shared read-only.
    _stems: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def stems(self, text: str) -> frozenset[str]:
        """The stems of the text's content words in the question's language (``stems_in``)."""
        found = self._stems.get(text)
        if found is None:
            found = frozenset(stem_tuple_in(text, self.language))
            meant = {key for key, alias in self.aliases.items() if alias <= found}
            found = self._stems[text] = found | meant if meant else found
        return found

    def aliased(self, *texts: str) -> set[str]:
        """The words of the question's entities that the texts write otherwise (``aliases``: "pull
        request" for "PR"): they name those words, as ``names_entity`` reads a text's words."""
        if not self.aliases:
            return set()
        meant = self.aliases.keys() & set().union(*(self.stems(t) for t in texts))
        return {w for e in self.entities for w in e if stem_in(w, self.language) in meant}

    def written_otherwise(self, entity: tuple[str, ...]) -> bool:
        """Every word of the entity is one no retrieved passage writes, read through its alias
        ("PR" for "pull request", "the EU" for "the European Union")."""
        return all(stem_in(w, self.language) in self.aliases for w in entity)

    @cached_property
    def total(self) -> float:
        """The key terms' weight together (read for every sentence scored: summed once)."""
        return math.fsum(self.weights.values())

    @property
    def empty(self) -> bool:
        return not self.weights and not self.entities


def focus_of(
    question: str,
    passages: Sequence[Passage],
    *,
    extra: Iterable[str] = (),
    aliases: Mapping[str, frozenset[str]] | None = None,
) -> QuestionFocus:
    """Key terms (weighted by rarity among ``passages``) and key entities of the question.
    ``extra`` holds words that name where to search (collection names): not part of the ask.
    ``aliases``: key stems read by meaning (``QuestionFocus.aliases``)."""
    language = detect_language(question)
    skip = {stem_in(w, language) for w in extra}
    function_words = FUNCTION_WORDS.get(language, frozenset())
    key = {stem_in(t, language) for t in key_terms(question) if t not in function_words} - skip
    # A passage's parts are analysed apart (cached per text, so each is read once per question);
    # the union is what the joined text gives: no word spans the two. Only the key stems are
    # looked up in each part's stems: how many passages have each is all the weights need.
    found: list[str] = []  # each passage's key stems, counted once at the end
    meant = {k: a for k, a in (aliases or {}).items() if k in key}
    for p in passages:
        own = key.intersection(stem_tuple_in(p.text, language))
        own.update(key.intersection(stem_tuple_in(p.title, language)))
        if meant:
            present = frozenset(stem_tuple_in(p.text, language)) | frozenset(stem_tuple_in(p.title, language))
            own.update(k for k, a in meant.items() if a <= present)
        found.extend(own)
    having = Counter(found)
    n = len(passages) or 1
    weights = {s: math.log(1 + n / (1 + having[s])) + 0.1 for s in key}
    entities = []
    for entity in key_entities(question, language=language):
        content = tuple(w for w in words(entity) if stem_in(w, language) not in skip)
        if content:
            entities.append(content)
    return QuestionFocus(
        weights=weights,
        entities=tuple(dict.fromkeys(entities)),
        language=language,
        asks=expected_answer(question) if language == DEFAULT_LANGUAGE else "any",
        question_words=frozenset(words(question)),
        aliases=meant,
    )


_YEAR_RE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
# Months, but "may" and "march", which are months only as written with a capital inside a
# sentence ("in May", not "you may not carry over").
_MONTHS = frozenset("january february april june july august september october november december".split())
_MONTH_OR_WORD_RE = re.compile(r"(?<=\S )(?:May|March)\b")
# A day of the week (or its plural, "Sundays") and a time of day answer "when" and "what day" as
# a date does: "from Tuesday 10:00 to the next Tuesday 10:00". A time has a two-digit hour or says
# a.m. or p.m. ("9:30 am"): "John 3:16" and a ratio of 3:45 are none.
_WEEKDAYS = frozenset(
    f"{day}{plural}"
    for day in "monday tuesday wednesday thursday friday saturday sunday".split()
    for plural in ("", "s")
)
_CLOCK_RE = re.compile(
    r"\b(?:([01][0-9]|2[0-3]):([0-5][0-9])\b|([1-9]):([0-5][0-9]) ?(?=[ap]\.?m\b))", re.IGNORECASE
)
# Numbers written out, and how often a thing happens ("once a week", "reviewed quarterly"): what
# "how many", "how often" and "how soon" are answered with.
_NUMBER_WORDS = frozenset(
    """two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty
    hundred thousand million billion dozen once twice hourly daily weekly biweekly fortnightly monthly
    quarterly yearly annually""".split()
)


def offers_answer(focus: QuestionFocus, sentence: str) -> bool:
    """Whether the sentence holds something of the kind the question asks for (a date, a number,
    a name) that the question does not already say: what an answering sentence adds."""
    if focus.asks == "any":
        return False
    asked = focus.question_words
    if focus.asks in ("date", "day"):
        years = [y for y in _YEAR_RE.findall(sentence) if y not in asked]
        if years or (_MONTH_OR_WORD_RE.search(sentence) and not {"may", "march"} & asked):
            return True
        # a time the question says ("the 10:00 standup") is no answer: its words are "10", "00"
        if any(not {h or h2, m or m2} <= asked for h, m, h2, m2 in _CLOCK_RE.findall(sentence)):
            return True
        return any((w in _MONTHS or w in _WEEKDAYS) and w not in asked for w in words(sentence))
    if focus.asks == "number":
        return any((_has_digit(w) or w in _NUMBER_WORDS) and w not in asked for w in words(sentence))
    return any(w not in asked for w in name_words(sentence))


def term_coverage(focus: QuestionFocus, sentence: str, title: str) -> float:
    """Share of the key-term weight the sentence carries; its passage title counts half."""
    if not focus.total:
        return 0.0
    own = focus.stems(sentence) & focus.weights.keys()
    titled = (focus.stems(title) & focus.weights.keys()) - own
    weight = focus.weights.__getitem__  # summed through ``map``: cheaper than a generator
    return (math.fsum(map(weight, own)) + 0.5 * math.fsum(map(weight, titled))) / focus.total


def names_entity(entity: tuple[str, ...], text_words: set[str]) -> bool:
    """Every word of the entity is in the text; a word with digits may be written apart
    ("SEV1" for "SEV-1")."""
    return all(w in text_words or (_has_digit(w) and _spelled_apart(w, text_words)) for w in entity)


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _spelled_apart(word: str, text_words: set[str]) -> bool:
    head = word.rstrip("0123456789")
    return bool(head) and head != word and head in text_words and word[len(head) :] in text_words


def entity_share(focus: QuestionFocus, text: str, *more: str) -> float:
    """Share of the question's key entities named in the text, or in the texts together (1.0
    when it names none). ``entity_share(f, a, b)`` is ``entity_share(f, a + " " + b)`` without
    reading the joined text anew: no word spans the space."""
    if not focus.entities:
        return 1.0
    # A name the asker writes otherwise than the documents ("the EU", "the European Union"),
    # read by meaning or spelling (``QuestionFocus.aliases``), is named where its alias is.
    present = set(tokens(text)).union(*(tokens(t) for t in more)) | focus.aliased(text, *more)
    return sum(names_entity(e, present) for e in focus.entities) / len(focus.entities)


def bears_on(focus: QuestionFocus, sentence: str, title: str) -> bool:
    """A sentence bears on the question when it carries a key term itself, or its passage is
    about one of the question's entities and the sentence says something of it."""
    if focus.stems(sentence) & focus.weights.keys():
        return True
    title_words = set(words(title))
    return any(names_entity(e, title_words) for e in focus.entities)


@dataclass(frozen=True)
class Coverage:
    """Whether the evidence answers the question, and why not when it does not."""

    found: bool
    missing_entities: tuple[str, ...] = ()
    missing_terms: tuple[str, ...] = ()
    best_coverage: float = 0.0
    joint_coverage: float = 0.0
    missing_share: float = 0.0
    unnamed_entities: tuple[str, ...] = ()  # named by no retrieved passage at all
    subject_share: float = 1.0  # key-term weight of the entities some retrieved passage is about
    passage_coverage: float = 0.0  # the best retrieved passage's share of the key-term weight
    hop_missing: bool = False  # a bridge's second hop found nothing about the entity it followed


def _opening_words(passage: Passage, count: int) -> list[str]:
    """The first ``count`` words of the passage's text after any heading line (its title)."""
    text = passage.text
    first_line, _, rest = text.partition("\n")
    if rest and first_line.strip() and first_line.strip() in passage.title:
        text = rest
    return words(text[: 40 * count])[:count]


def subject_share(focus: QuestionFocus, retrieved: Sequence[Passage]) -> float:
    """Share of the entities' key-term weight held by entities that a retrieved passage is about:
    its title names the entity, or its text opens with it (within a few words). 1.0 when the
    question names no entity."""
    if not focus.entities:
        return 1.0
    titles = [set(words(p.title)) for p in retrieved]
    longest = max(len(e) for e in focus.entities) + OPENING_SLACK
    openings = [_opening_words(p, longest) for p in retrieved]  # read once, sliced per entity
    weights = []
    for entity in focus.entities:
        weight = sum(focus.weights.get(stem_in(w, focus.language), 0.0) for w in entity)
        reach = len(entity) + OPENING_SLACK
        if focus.written_otherwise(entity):
            # Where the documents write other words for it, their titles and openings write
            # those: a passage that names it at all is what the words can tell.
            about = any(set(entity) <= focus.aliased(p.title, p.text) for p in retrieved)
        else:
            about = any(names_entity(entity, t) for t in titles) or any(
                names_entity(entity, set(opening[:reach])) for opening in openings
            )
        weights.append((weight, about))
    total = sum(w for w, _ in weights)
    if not total:
        return 1.0
    return sum(w for w, about in weights if about) / total


def assess_coverage(
    focus: QuestionFocus,
    best: Sequence[tuple[str, Passage]],
    retrieved: Sequence[Passage],
    *,
    comparison: bool = False,
) -> Coverage:
    """Does the evidence answer the question? ``best`` holds the top sentences with their passages.

    Not covered when a key entity is named by no retrieved passage, when the key terms that no
    retrieved passage has carry too much of the question's weight, when even the best sentence
    carries too little of the key terms, or when the question's entities are not what the
    retrieved passages are about (for a comparison, its sides; for other questions, unless the
    best passage covers the ask well). (The thresholds were chosen on the not-found suite of
    ``confer eval``: hidden evidence against answerable questions; see README.)
    """
    if focus.empty:
        return Coverage(found=bool(best), best_coverage=1.0 if best else 0.0)
    if not best:
        return Coverage(found=False)
    # Passages' words are read only when the question names entities to look for in them.
    evidence_words = (
        [_words_of(p) | focus.aliased(p.title, p.text) for _, p in best] if focus.entities else []
    )
    missing_entities = tuple(
        " ".join(e) for e in focus.entities if not any(names_entity(e, ws) for ws in evidence_words)
    )
    # Which key stems some retrieved passage has (the passages' other stems are not needed).
    everywhere: set[str] = set()
    for p in retrieved:
        everywhere.update(focus.weights.keys() & focus.stems(p.title))
        everywhere.update(focus.weights.keys() & focus.stems(p.text))
    total = focus.total or 1.0
    retrieved_words = (
        [_words_of(p) | focus.aliased(p.title, p.text) for p in retrieved] if focus.entities else []
    )
    unnamed = tuple(
        " ".join(e) for e in focus.entities if not any(names_entity(e, ws) for ws in retrieved_words)
    )
    absent = [s for s in focus.weights if s not in everywhere]
    missing_terms = tuple(s for s in absent if focus.weights[s] / total >= CENTRAL_TERM_SHARE)
    missing_share = math.fsum(focus.weights[s] for s in absent) / total
    best_coverage = max(term_coverage(focus, text, p.title) for text, p in best) if focus.total else 1.0
    joint = " ".join(text for text, _ in best[:JOINT_SENTENCES])
    joint_titles = " ".join(p.title for _, p in best[:JOINT_SENTENCES])
    joint_coverage = term_coverage(focus, joint, joint_titles) if focus.total else 1.0
    subjects = subject_share(focus, retrieved)
    passage_coverage = max(
        (term_coverage(focus, p.text, p.title) for p in retrieved[:PASSAGES_COVERING]), default=0.0
    )
    about = (
        subjects >= MIN_SUBJECT_SHARE
        if comparison
        else subjects + passage_coverage >= MIN_SUBJECT_AND_PASSAGE
    )
    carried = joint_coverage >= MIN_JOINT_COVERAGE if comparison else best_coverage >= MIN_TERM_COVERAGE
    found = not unnamed and missing_share < MAX_MISSING_SHARE and carried and about
    return Coverage(
        found=found,
        missing_entities=missing_entities,
        missing_terms=missing_terms,
        best_coverage=round(best_coverage, 4),
        joint_coverage=round(joint_coverage, 4),
        missing_share=round(missing_share, 4),
        unnamed_entities=unnamed,
        subject_share=round(subjects, 4),
        passage_coverage=round(passage_coverage, 4),
    )


def _words_of(passage: Passage) -> set[str]:
    """The words of a passage's title and text (each part's words are cached per text)."""
    return set(tokens(passage.title)).union(tokens(passage.text))
