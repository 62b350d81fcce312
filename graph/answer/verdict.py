"""Yes/no verdicts and "which came first" choices for comparisons, read from the answer's own
cited sentences.

A verdict is stated only where each side's own sentence states the attribute the question asks,
and it fails closed: anything it cannot read (a negated sentence, a side without its own sentence,
an attribute it has no reading for) gives no verdict, and the answer's quoted sentences stand
alone. A wrong verdict is worse than none. Two readings, neither tied to a subject domain:

- **dates**: "Were X and Y released in the same year?", "Was X founded before 2010?", and "Which
  came first / who died first / who is older, X or Y?": the year each side's sentence gives for
  the question's own verb ("released", "founded", "died"); a person's birth only when birth is
  asked ("born", "who is older"), their death when death is asked ("died": the second year of
  "(1882 – 1941)"). A sentence that dates another event dates nothing.
- **shared predicate**: "Are X and Y both P?" (and "Is X a P and Y a Q?"): yes when each side's
  own sentence carries every content word of its predicate. Never "no": that a sentence does not
  say P does not make it false.

A side's own sentences open with its name, or open its passage (the passage titled with its name);
"It is …" continuing its passage counts for a yes. The verdict cites exactly the sentences that
decided it and adds no fact they do not state.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from graph.models import Answer, AnswerSection, AnswerSentence, Derived, Plan
from retrieval.passages import Passage
from retrieval.text import STOPWORDS, stems, words

VerdictKind = Literal["year", "both"]

_PRONOUN_RE = re.compile(r"^(It|They)\s+(is|was|are|were)\b")
_SUBJECT_RE = re.compile(r"\s*\(.*\)\s*$")  # a title's parenthesis: "Ed Wood (film)"
# A name's lower-case particles in many languages ("de Havilland", "van Gogh", "bin Laden").
_NAME_PARTICLES = frozenset("de da di del della van von der den le la du dos das bin ibn".split())
_TRUNCATED_RE = re.compile(r"^(by|of|the|de|da|la|le|von|van|and|&)\s+[A-Z0-9]")  # "Dead | by Sunrise"
_COPULA_RE = re.compile(r"\b(is|was|are|were)\b")
_OTHERS_YEAR_RE = re.compile(r"(?:\b(?:the|his|her|its|their)|'s)\s+$")  # "the 1960 novel"
_YEAR_RE = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d|s)")
_NEGATION_RE = re.compile(r"\b(not|never|no longer|neither|nor)\b|n't\b", re.IGNORECASE)
_YES_NO_RE = re.compile(r"^\s*(are|were|is|was|do|does|did|have|has|had)\b", re.IGNORECASE)
_BE_RE = re.compile(r"^\s*(are|were|is|was)\b", re.IGNORECASE)
_SAME_YEAR_RE = re.compile(r"\bsame year\b", re.IGNORECASE)
_BEFORE_AFTER_RE = re.compile(r"\b(before|after|prior to)\s+(1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
# "Which came first, X or Y?" / "Who is younger, X or Y?": which end of time the question wants.
_WHICH_RE = re.compile(r"^\s*(which|who|what)\b", re.IGNORECASE)
_EARLIER_RE = re.compile(r"\b(older|oldest|earlier|earliest|first)\b", re.IGNORECASE)
# ("later" alone is left out: "Which band, X or Y, later became …" asks about another event.)
_LATER_RE = re.compile(r"\b(younger|youngest|newer|newest|more recent|most recent)\b", re.IGNORECASE)
# "the first to …", "the first Russian composer", "first album": a rank, not the order in time.
_FIRST_RANK_RE = re.compile(r"\b(?i:the\s+first)\b|\b(?i:first)\s+(?!(?:or|and)\b)[a-z]")
# The event a question dates: a past participle or past tense of its own ("released", "died",
# "founded"), or "born"; words that only name or place a thing date nothing.
_EVENT_RE = re.compile(r"\b(born|[a-z]{2,}ed)\b")
_NOT_EVENTS = frozenset("named called based located situated considered known used described".split())
# Age compares births: "older", "younger".
_AGE_RE = re.compile(r"\b(older|oldest|younger|youngest)\b", re.IGNORECASE)
_BORN_RE = re.compile(r"\(born\b")
_LIFESPAN_RE = re.compile(r"^[^()]*\((?:[^()]*?\s)?(1[0-9]{3}|20[0-9]{2})\s*[–—-]")  # "X (1882 – 1941)"
_DEATH_RE = re.compile(
    r"^[^()]*\((?:[^()]*?\s)?(?:1[0-9]{3}|20[0-9]{2})\s*[–—-]\s*(?:[^()]*?\s)?(1[0-9]{3}|20[0-9]{2})\s*\)"
)  # the second year of "X (3 May 1882 – 2 June 1941)"
_ATTRIBUTIVE_YEAR_RE = re.compile(r"\b(?:is|was) an? (1[0-9]{3}|20[0-9]{2})\b")  # "is a 1986 film"
# "Is Karjiang a mountain and Sherpi Kangri a mountain peak?": two names, each with its own kind.
_PAIRED_RE = re.compile(
    r"^\s*(?i:is|was|are|were)\s+(?P<a>[A-Z0-9\"“][^?]*?)\s+(?:an?|the)\s+(?P<p>[^?]+?)\s+and\s+"
    r"(?P<b>[A-Z0-9\"“][^?]*?)\s+(?:an?|the)\s+(?P<q>[^?]+?)\s*\?*\s*$"
)
# Words of a "both" predicate that say nothing a sentence must repeat.
_LIGHT = frozenset(
    """both each also same located situated based described considered known classified called
    type types kind kinds sort form forms example examples""".split()
)
# Words that make a "both" predicate need more than word presence (a comparison, a quantity, a
# time, a place relation), so no verdict is derived from it.
_HARD = frozenset(
    """same different more less most least than other another only all every still century
    centuries decade before after during until first last best worst largest biggest smallest
    oldest youngest tallest highest lowest longest shortest greatest newest earliest latest from
    in of born""".split()
)


@dataclass(frozen=True)
class Side:
    """One compared thing and the answer sentences about it (with their citation numbers):
    ``sentences`` have it as their subject; ``more`` go on about it in its own passage ("It is
    native to Asia.")."""

    name: str
    sentences: tuple[AnswerSentence, ...]
    more: tuple[AnswerSentence, ...] = ()


@dataclass(frozen=True)
class Verdict:
    yes: bool
    kind: VerdictKind
    sentence: AnswerSentence


@dataclass(frozen=True)
class Choice:
    """The side a "Which came first, X or Y?" question asks for, and the sentence saying so."""

    side: str
    sentence: AnswerSentence


def yes_no_question(question: str, plan: Plan) -> bool:
    """A yes/no comparison of two named things ("Are X and Y both …?")."""
    return plan.kind == "comparative" and len(plan.sides) == 2 and bool(_YES_NO_RE.match(question))


def event_of(question: str) -> str:
    """The event the question dates ("died", "released", "born"), or "" for none ("Which came
    first?"); a question about age ("older") dates births."""
    if _AGE_RE.search(question) and re.match(r"^\s*who\b", question, re.IGNORECASE):
        return "born"  # a person's age is their birth's
    for match in _EVENT_RE.finditer(question.lower()):
        if match.group(1) not in _NOT_EVENTS:
            return match.group(1)
    return ""


def year_of(sentence: str, verb: str) -> int | None:
    """The year the sentence gives for ``verb`` ("released", "formed"): the first year after the
    verb when the sentence has it, else the sentence's only year, unless that year is another
    thing's ("based on the 1960 novel"); none when it is unclear."""
    text = sentence.lower()
    if verb:
        at = re.search(rf"\b{re.escape(verb)}\b", text)
        if at is not None:
            after = _YEAR_RE.search(text, at.end())
            return int(after.group(1)) if after else None
    years = list(_YEAR_RE.finditer(text))
    if len({y.group(1) for y in years}) != 1 or any(_OTHERS_YEAR_RE.search(text[: y.start()]) for y in years):
        return None
    return int(years[0].group(1))


def date_of(sentence: str, verb: str) -> int | None:
    """The year a side's sentence dates the question's event by: after the event's own verb when
    the sentence has it; a birth from "(born …)" or a lifespan's first year, a death from its
    second; "is a 1986 film" for the work's own making or release; with no event in the question,
    the sentence's only year. None when the sentence dates something else or is unclear (fail
    closed)."""
    if verb and re.search(rf"\b{re.escape(verb)}\b", sentence, re.IGNORECASE):
        return year_of(sentence, verb)
    lifespan = _LIFESPAN_RE.search(sentence)
    if verb == "born":
        if _BORN_RE.search(sentence):
            return year_of(sentence, "born")
        return int(lifespan.group(1)) if lifespan is not None else None
    if verb == "died":
        death = _DEATH_RE.search(sentence)
        return int(death.group(1)) if death is not None else None
    # "is a 1986 film": the work's own year, what a question of its making or release asks.
    attributive = _ATTRIBUTIVE_YEAR_RE.search(sentence)
    if attributive is not None:
        return int(attributive.group(1))
    return None if verb else year_of(sentence, "")


def _sides(plan: Plan, answer: Answer) -> list[Side]:
    """Each side's subject sentences in the answer: the sentences whose subject is the side."""
    by_number = {c.n: c.passage for c in answer.citations}
    result = []
    for name in plan.sides:
        about: list[AnswerSentence] = []
        more: list[AnswerSentence] = []
        for section in answer.sections:
            for sentence in section.sentences:
                cited: list[Passage] = [by_number[n] for n in sentence.citations if n in by_number]
                if not cited:
                    continue
                if _subject_sentence(name, sentence.text, cited):
                    about.append(sentence)
                elif _continues(name, sentence.text, cited):
                    more.append(sentence)
        result.append(Side(name=name, sentences=tuple(about), more=tuple(more)))
    return result


def _subject_sentence(name: str, sentence: str, cited: Sequence[Passage]) -> bool:
    """The sentence is about ``name`` as its subject: it opens with the name ("Local H is …"), or
    it opens a cited passage whose title is the name; a sentence that only mentions the name, or a
    passage about something named after it, decides nothing about it."""
    copula = _COPULA_RE.search(sentence)
    if copula is not None:
        head = sentence[: copula.start()].strip()
        head = re.sub(r"^(the|a|an)\s+", "", head, flags=re.IGNORECASE)
        wanted = re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.IGNORECASE).lower()
        # The name, and no more of a longer name after it ("Duke Energy Florida" is not "Duke Energy").
        if head.lower().startswith(wanted) and not re.match(r"[\w-]|\s+[A-Z0-9]", head[len(wanted) :]):
            return True
    return any(_titled(p, name) and _opening(sentence, p) for p in cited)


def _titled(passage: Passage, name: str) -> bool:
    """The passage is the side's own ("Ed Wood (film)" for "Ed Wood")."""
    return stems(_SUBJECT_RE.sub("", passage.title)) == stems(name)


def _continues(name: str, sentence: str, cited: Sequence[Passage]) -> bool:
    """A later sentence of the side's own passage whose subject is "It" / "They"."""
    return bool(_PRONOUN_RE.match(sentence)) and any(_titled(p, name) and sentence in p.text for p in cited)


def _opening(sentence: str, passage: Passage) -> bool:
    """The sentence opens its passage (after a heading line)."""
    start = passage.text.find(sentence)
    return start >= 0 and "." not in passage.text[:start]


def _predicate(question: str, sides: Sequence[str]) -> str:
    """The question's words after its second side ("both from the United States")."""
    at = question.find(sides[1])
    rest = question[at + len(sides[1]) :] if at >= 0 else ""
    return " ".join(rest.strip(" ?.!,").split())


def _plain(sentence: AnswerSentence) -> bool:
    """A sentence without negation: its attributes are stated, not denied."""
    return not _NEGATION_RE.search(sentence.text)


def _decide_year(
    predicate: str, sides: Sequence[Side]
) -> tuple[bool, list[AnswerSentence], list[int]] | None:
    verb = event_of(predicate)
    values = []
    used = []
    for side in sides:
        found = next(((s, y) for s in side.sentences if _plain(s) and (y := date_of(s.text, verb))), None)
        if found is None:
            return None
        used.append(found[0])
        values.append(found[1])
    if _SAME_YEAR_RE.search(predicate):
        return values[0] == values[1], used, values
    bound = _BEFORE_AFTER_RE.search(predicate)
    if bound is None:
        return None
    limit = int(bound.group(2))
    before = bound.group(1).lower() != "after"
    holds = [(y < limit) if before else (y > limit) for y in values]
    return all(holds), used, values


def _carried(predicate: str) -> set[str] | None:
    """The stems a side's sentence must carry for "both <predicate>"; None when word presence
    cannot decide it."""
    if any(w in _HARD or w.isdigit() for w in words(predicate)):
        return None
    needed = stems(" ".join(w for w in words(predicate) if w not in STOPWORDS and w not in _LIGHT))
    return needed or None


def _decide_both(predicate: str, sides: Sequence[Side]) -> list[AnswerSentence] | None:
    """The sentences that give each side the predicate (each carries all its content words), or
    None: a verdict is "yes" or nothing."""
    needed = _carried(predicate)
    if needed is None:
        return None
    used: list[AnswerSentence] = []
    for side in sides:
        found = next(
            (s for s in (*side.sentences, *side.more) if _plain(s) and needed <= stems(s.text)),
            None,
        )
        if found is None:
            return None
        used.append(found)
    return used


def derive(question: str, plan: Plan, answer: Answer) -> Verdict | None:
    """The verdict the answer's cited sentences decide, or none."""
    paired = _PAIRED_RE.match(" ".join(question.split()))
    if answer.found and plan.kind == "comparative" and paired is not None:
        return _derive_paired(paired, plan, answer)
    if not answer.found or not yes_no_question(question, plan):
        return None
    a, b = (_side_name(side) for side in plan.sides)
    predicate = _predicate(question, plan.sides)
    if _TRUNCATED_RE.match(predicate):
        # The question's second name was read short ("Dead" of "Dead by Sunrise"): in "X and Y
        # both …" the second name runs up to "both"; otherwise nothing is known of it.
        rest = re.match(r"(.+?)\s+(both\b.*)$", predicate, re.IGNORECASE)
        if rest is None:
            return None
        b, predicate = f"{b} {rest.group(1)}", rest.group(2)
    sides = _sides(plan.model_copy(update={"sides": (a, b)}), answer)
    if any(not (s.sentences or s.more) for s in sides):
        return None
    if _SAME_YEAR_RE.search(predicate) or _BEFORE_AFTER_RE.search(predicate):
        dated = _decide_year(predicate, sides)
        if dated is None:
            return None
        yes, used, years = dated
        derived = Derived(kind="years", sides=(a, b), yes=yes, years=(years[0], years[1]))
        return _verdict(yes, "year", derived, used)
    if _BE_RE.match(question):
        both = _decide_both(predicate, sides)
        if both is None:
            return None
        derived = Derived(kind="both", sides=(a, b), predicates=(_without_both(predicate),))
        return _verdict(True, "both", derived, both)
    return None


def _verdict(yes: bool, kind: VerdictKind, derived: Derived, used: Sequence[AnswerSentence]) -> Verdict:
    numbers = tuple(sorted({n for s in used for n in s.citations}))
    return Verdict(yes=yes, kind=kind, sentence=AnswerSentence(text="", citations=numbers, derived=derived))


def _derive_paired(paired: re.Match[str], plan: Plan, answer: Answer) -> Verdict | None:
    """ "Is X a P and Y a Q?": yes when each side's own sentence carries its own predicate."""
    a, b = (_side_name(paired.group(k)) for k in ("a", "b"))
    sides = _sides(plan.model_copy(update={"sides": (a, b)}), answer)
    first = _decide_both(paired.group("p"), [sides[0]])
    second = _decide_both(paired.group("q"), [sides[1]])
    if first is None or second is None:
        return None
    derived = Derived(kind="pair", sides=(a, b), predicates=(paired.group("p"), paired.group("q")))
    return _verdict(True, "both", derived, [*first, *second])


def _clean(side: str) -> str:
    return " ".join(side.replace('"', " ").replace("“", " ").replace("”", " ").split()).strip(" ,")


def _side_name(side: str) -> str:
    """The side's name without the kind words the question put before it ("the documentaries
    One Big Hapa Family"); kept whole when those words relate it to the name ("libretto of X")."""
    side = _clean(side)
    kind = re.match(r"^((?:[a-z][\w'-]*\s+)+)(?=[A-Z0-9])", side)
    # Never a name's own lower-case particle ("de Havilland", "van Gogh").
    taken = set(kind.group(1).split()) if kind is not None else set()
    if kind is not None and not taken & (STOPWORDS - {"the", "a", "an"}) and not taken & _NAME_PARTICLES:
        return side[kind.end() :]
    return side


def _without_both(predicate: str) -> str:
    return " ".join(w for w in predicate.split() if w.lower() != "both")


def choose(question: str, plan: Plan, answer: Answer) -> Choice | None:
    """The earlier (or later) side of a "which came first / who died first / who is younger"
    comparison, when each side's own cited sentences date the question's event with one year and
    the years differ; else none."""
    if not answer.found or plan.kind != "comparative" or len(plan.sides) != 2:
        return None
    if not _WHICH_RE.match(question) or _YES_NO_RE.match(question):
        return None
    earlier = bool(_EARLIER_RE.search(question)) and not _FIRST_RANK_RE.search(question)
    later = bool(_LATER_RE.search(question))
    if earlier == later or not all(_whole(question, side) for side in plan.sides):
        return None
    a, b = (_side_name(side) for side in plan.sides)
    verb = event_of(question)
    years: list[int] = []
    used: list[AnswerSentence] = []
    for side in _sides(plan.model_copy(update={"sides": (a, b)}), answer):
        dated = [(s, y) for s in side.sentences if _plain(s) and (y := date_of(s.text, verb))]
        if not dated or len({y for _, y in dated}) > 1:  # none, or two that disagree
            return None
        used.append(dated[0][0])
        years.append(dated[0][1])
    if years[0] == years[1]:
        return None
    first = a if years[0] < years[1] else b
    chosen = first if earlier else (b if first == a else a)
    word = re.search(r"\b(older|younger|newer)\b", question, re.IGNORECASE)  # the question's own
    derived = Derived(
        kind="choice",
        sides=(a, b),
        years=(years[0], years[1]),
        chosen=chosen,
        comparison=word.group(1).lower() if word is not None else "",
        event=verb,
        earlier=earlier,
    )
    numbers = tuple(sorted({n for s in used for n in s.citations}))
    return Choice(side=chosen, sentence=AnswerSentence(text="", citations=numbers, derived=derived))


def _whole(question: str, side: str) -> bool:
    """The side's name is read whole: the question goes on with "or" or ends after it."""
    return bool(re.search(rf"{re.escape(side)}[\"”']?\s*(?:[?.,!]|\s+or\b|$)", question))


def with_verdict(question: str, plan: Plan, answer: Answer) -> Answer:
    """The answer opening with its verdict (a yes/no comparison) or its choice ("which came
    first"), when its cited sentences decide one."""
    verdict = derive(question, plan, answer)
    if verdict is not None:
        opening = AnswerSection(collection="", sentences=(verdict.sentence,))
        return answer.model_copy(update={"sections": (opening, *answer.sections), "verdict": verdict.yes})
    choice = choose(question, plan, answer)
    if choice is None:
        return answer
    opening = AnswerSection(collection="", sentences=(choice.sentence,))
    return answer.model_copy(update={"sections": (opening, *answer.sections), "choice": choice.side})
