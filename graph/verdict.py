"""Yes/no verdicts for comparison questions, derived from the answer's own cited sentences.

"Were X and Y of the same nationality?" is answered by two quoted sentences, one a side; the
verdict ("Yes: …" / "No: …") is the sentence Confer derives from them. It is stated only when
each side's own sentence decides it, with attribute values of one type compared exactly:

- ``nationality``: "same nationality" / "same country": the nationality a side's sentence gives
  its subject after "is" / "was" (demonyms and country names, "Polish-American" is both, a
  "Russian-born" is neither); same sets say yes, disjoint sets say no, anything else nothing;
- ``year``: "released in the same year", "formed before 2010": the year a side's sentence gives
  (after the question's verb when the sentence has it, else its only year);
- ``both``: "Are X and Y both <words>?": yes when each side's sentence carries every content word
  of the predicate; no only when a side's sentence gives a place or nationality of the same kind
  as the predicate's (a country, a US state) and not the predicate's one.

Anything else (a negated sentence, a side without a sentence, a predicate the rules cannot read)
gives no verdict: a wrong verdict is worse than none. The verdict cites exactly the sentences that
decided it and never adds a fact they do not state.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from graph.models import Answer, AnswerSection, AnswerSentence, Plan
from retrieval.passages import Passage
from retrieval.text import STOPWORDS, stems, words

VerdictKind = Literal["nationality", "year", "both"]

# Demonyms and country names, each to one country (the UK's nations to the UK: "English" and
# "British" are the same nationality).
_COUNTRIES: dict[str, str] = {}
for _country, _names in {
    "us": "American|United States|USA|U.S.",
    "uk": "British|English|Scottish|Welsh|United Kingdom|England|Scotland|Wales|Britain",
    "ie": "Irish|Ireland",
    "ca": "Canadian|Canada",
    "au": "Australian|Australia",
    "nz": "New Zealand|New Zealander",
    "fr": "French|France",
    "de": "German|Germany",
    "it": "Italian|Italy",
    "es": "Spanish|Spain",
    "pt": "Portuguese|Portugal",
    "nl": "Dutch|Netherlands",
    "be": "Belgian|Belgium",
    "ch": "Swiss|Switzerland",
    "at": "Austrian|Austria",
    "se": "Swedish|Sweden",
    "no": "Norwegian|Norway",
    "dk": "Danish|Denmark",
    "fi": "Finnish|Finland",
    "is": "Icelandic|Iceland",
    "pl": "Polish|Poland",
    "cz": "Czech|Czech Republic",
    "hu": "Hungarian|Hungary",
    "ro": "Romanian|Romania",
    "ru": "Russian|Russia",
    "ua": "Ukrainian|Ukraine",
    "gr": "Greek|Greece",
    "tr": "Turkish|Turkey",
    "il": "Israeli|Israel",
    "eg": "Egyptian|Egypt",
    "za": "South African|South Africa",
    "ng": "Nigerian|Nigeria",
    "in": "Indian|India",
    "pk": "Pakistani|Pakistan",
    "cn": "Chinese|China",
    "jp": "Japanese|Japan",
    "kr": "South Korean|Korean|South Korea|Korea",
    "ph": "Filipino|Philippine|Philippines",
    "id": "Indonesian|Indonesia",
    "th": "Thai|Thailand",
    "vn": "Vietnamese|Vietnam",
    "mx": "Mexican|Mexico",
    "br": "Brazilian|Brazil",
    "ar": "Argentine|Argentinian|Argentinean|Argentina",
    "cl": "Chilean|Chile",
    "co": "Colombian|Colombia",
    "cu": "Cuban|Cuba",
    "pe": "Peruvian|Peru",
    "ve": "Venezuelan|Venezuela",
    "yu": "Serbian|Serbia|Croatian|Croatia",
}.items():
    for _name in _names.split("|"):
        _COUNTRIES[_name.lower()] = _country
_US_STATES = frozenset(
    """alabama alaska arizona arkansas california colorado connecticut delaware florida georgia
    hawaii idaho illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts
    michigan minnesota mississippi missouri montana nebraska nevada ohio oklahoma oregon
    pennsylvania tennessee texas utah vermont virginia washington wisconsin wyoming""".split()
) | frozenset(
    {"new hampshire", "new jersey", "new mexico", "new york", "north carolina", "north dakota"}
    | {"rhode island", "south carolina", "south dakota", "west virginia"}
)
# Longest names first, so "South African" is read before "African" would be.
_PLACE_RE = re.compile(
    r"(?<!\w)("
    + "|".join(re.escape(n) for n in sorted({*_COUNTRIES, *_US_STATES}, key=len, reverse=True))
    + r")(-born|-based)?(?![\w])",
    re.IGNORECASE,
)
_SUBJECT_RE = re.compile(r"\s*\(.*\)\s*$")  # a title's parenthesis: "Ed Wood (film)"
_TRUNCATED_RE = re.compile(r"^(by|of|the|de|da|la|le|von|van|and|&)\s+[A-Z0-9]")  # "Dead | by Sunrise"
_COPULA_RE = re.compile(r"\b(is|was|are|were)\b")
_YEAR_RE = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d|s)")
_NEGATION_RE = re.compile(r"\b(not|never|no longer|neither|nor)\b|n't\b", re.IGNORECASE)
_YES_NO_RE = re.compile(r"^\s*(are|were|is|was|do|does|did|have|has|had)\b", re.IGNORECASE)
_BE_RE = re.compile(r"^\s*(are|were|is|was)\b", re.IGNORECASE)
_SAME_NATION_RE = re.compile(r"\bsame (nationality|country)\b|\bfrom the same country\b", re.IGNORECASE)
_SAME_YEAR_RE = re.compile(r"\bsame year\b", re.IGNORECASE)
_BEFORE_AFTER_RE = re.compile(r"\b(before|after|prior to)\s+(1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
_YEAR_VERBS = (
    "released founded formed established published built born opened created launched started"
).split()
# Words of a "both" predicate that say nothing a sentence must repeat.
_LIGHT = frozenset(
    """both each also same located situated based described considered known classified called
    type types kind kinds sort form forms example examples""".split()
)
# Words that would make a "both" predicate need more than word presence (a comparison, a
# quantity, a time), so no verdict is derived from it.
_HARD = frozenset(
    """same different more less most least than other another only all every still century
    centuries decade before after during until""".split()
)


@dataclass(frozen=True)
class Side:
    """One compared thing and the answer sentences about it (with their citation numbers)."""

    name: str
    sentences: tuple[AnswerSentence, ...]


@dataclass(frozen=True)
class Verdict:
    yes: bool
    kind: VerdictKind
    sentence: AnswerSentence


def yes_no_question(question: str, plan: Plan) -> bool:
    """A yes/no comparison of two named things ("Are X and Y both …?")."""
    return plan.kind == "comparative" and len(plan.sides) == 2 and bool(_YES_NO_RE.match(question))


def places(text: str) -> list[tuple[str, bool]]:
    """Countries (by demonym or name) and US states the text names, in order, as (place, born):
    ``born`` for "-born" / "-based" qualifiers, which say where, not of what nationality."""
    found = []
    for match in _PLACE_RE.finditer(text):
        name = match.group(1).lower()
        if name == "georgia" or name == "washington":  # a country, a city and a US state
            continue
        found.append((_COUNTRIES.get(name, name), bool(match.group(2))))
    return found


def nationality(sentence: str) -> frozenset[str]:
    """The nationality a sentence gives its subject: the first demonyms (or country names) after
    its first "is" / "was", joined by hyphens ("Polish-American"); none when it gives none."""
    copula = _COPULA_RE.search(sentence)
    if copula is None:
        return frozenset()
    rest = sentence[copula.end() :]
    first: list[str] = []
    end = -1
    for match in _PLACE_RE.finditer(rest):
        name = match.group(1).lower()
        if name not in _COUNTRIES or match.group(2):
            continue
        if first and match.start() > end + 1:  # only names joined by a hyphen belong together
            break
        first.append(_COUNTRIES[name])
        end = match.end()
        if rest[end : end + 1] != "-":
            break
    return frozenset(first)


def year_of(sentence: str, verb: str) -> int | None:
    """The year the sentence gives for ``verb`` ("released", "formed"): the first year after the
    verb when the sentence has it, else the sentence's only year; none when it is unclear."""
    text = sentence.lower()
    if verb:
        at = re.search(rf"\b{re.escape(verb)}\b", text)
        if at is not None:
            after = _YEAR_RE.search(text, at.end())
            return int(after.group(1)) if after else None
    years = set(_YEAR_RE.findall(text))
    return int(years.pop()) if len(years) == 1 else None


def _sides(plan: Plan, answer: Answer) -> list[Side]:
    """Each side's subject sentences in the answer: the sentences whose subject is the side."""
    by_number = {c.n: c.passage for c in answer.citations}
    result = []
    for name in plan.sides:
        about: list[AnswerSentence] = []
        for section in answer.sections:
            for sentence in section.sentences:
                cited: list[Passage] = [by_number[n] for n in sentence.citations if n in by_number]
                if cited and _subject_sentence(name, sentence.text, cited):
                    about.append(sentence)
        result.append(Side(name=name, sentences=tuple(about)))
    return result


def _subject_sentence(name: str, sentence: str, cited: Sequence[Passage]) -> bool:
    """The sentence is about ``name`` as its subject: it opens with the name ("Local H is …"), or
    it opens a cited passage whose title is the name ("Edward Davis Wood Jr. … was …" under
    "Ed Wood"); a sentence that only mentions the name, or a passage about something named
    after it ("Cypress-pine" for "Cypress"), decides nothing about it."""
    copula = _COPULA_RE.search(sentence)
    if copula is None:
        return False
    head = sentence[: copula.start()].strip()
    head = re.sub(r"^(the|a|an)\s+", "", head, flags=re.IGNORECASE)
    wanted = re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.IGNORECASE).lower()
    # The name, and no more of a longer name after it ("Duke Energy Florida" is not "Duke Energy").
    if head.lower().startswith(wanted) and not re.match(r"[\w-]|\s+[A-Z0-9]", head[len(wanted) :]):
        return True
    return any(stems(_SUBJECT_RE.sub("", p.title)) == stems(name) and _opening(sentence, p) for p in cited)


def _opening(sentence: str, passage: Passage) -> bool:
    """The sentence opens its passage (after a heading line)."""
    start = passage.text.find(sentence)
    return start >= 0 and "." not in passage.text[:start]


def _predicate(question: str, sides: Sequence[str]) -> str:
    """The question's words after its second side ("both from the United States")."""
    at = question.find(sides[1])
    rest = question[at + len(sides[1]) :] if at >= 0 else ""
    return " ".join(rest.strip(" ?.!,").split())


def _decide_nationality(sides: Sequence[Side]) -> tuple[bool, list[AnswerSentence], list[str]] | None:
    values = []
    used = []
    for side in sides:
        found = next(((s, n) for s in side.sentences if (n := nationality(s.text)) and _plain(s)), None)
        if found is None:
            return None
        used.append(found[0])
        values.append(found[1])
    if values[0] == values[1]:
        return True, used, [_demonym(values[0])]
    if values[0] & values[1]:
        return None
    return False, used, [_demonym(v) for v in values]


def _demonym(countries: frozenset[str]) -> str:
    names = {c: n for n, c in reversed(list(_COUNTRIES.items()))}  # first spelling of each country
    return "-".join(sorted(names[c].title() if c in names else c for c in countries))


def _decide_year(
    predicate: str, sides: Sequence[Side]
) -> tuple[bool, list[AnswerSentence], list[int]] | None:
    verb = next((v for v in _YEAR_VERBS if re.search(rf"\b{v}\b", predicate, re.IGNORECASE)), "")
    values = []
    used = []
    for side in sides:
        found = next(((s, y) for s in side.sentences if (y := year_of(s.text, verb)) and _plain(s)), None)
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


def _plain(sentence: AnswerSentence) -> bool:
    """A sentence without negation: its attributes are stated, not denied."""
    return not _NEGATION_RE.search(sentence.text)


def _decide_both(
    predicate: str, sides: Sequence[Side]
) -> tuple[bool, list[AnswerSentence], list[str]] | None:
    """Yes when each side's sentence has every content word of the predicate (its places as
    places); no when a side's sentence gives another place of the predicate's kind instead."""
    wanted = places(predicate)
    if any(born for _, born in wanted) or len(wanted) > 1:
        return None
    place = wanted[0][0] if wanted else ""
    stripped = _PLACE_RE.sub(" ", predicate)
    if any(w in _HARD or w.isdigit() for w in words(stripped)):
        return None
    content = [w for w in words(stripped) if w not in STOPWORDS and w not in _LIGHT]
    needed = stems(" ".join(content))
    if not needed and not place:
        return None
    is_state = place in _US_STATES
    used: list[AnswerSentence] = []
    said: list[str] = []
    holds: list[bool] = []
    for side in sides:
        decided: tuple[AnswerSentence, bool, str] | None = None
        for sentence in side.sentences:
            if not _plain(sentence):
                continue
            named = [p for p, born in places(sentence.text) if is_state == (p in _US_STATES)]
            given = nationality(sentence.text)
            has_place = not place or place in named or place in given
            if has_place and needed <= stems(sentence.text):
                decided = (sentence, True, "")
                break
            if place and not has_place and (given or named):
                other = sorted(given)[0] if given and not is_state else named[0]
                decided = (sentence, False, other)
                break
        if decided is None:
            return None
        used.append(decided[0])
        holds.append(decided[1])
        said.append(decided[2])
    if all(holds):
        return True, used, []
    return False, used, [place, *said]


def derive(question: str, plan: Plan, answer: Answer) -> Verdict | None:
    """The verdict the answer's cited sentences decide, or none."""
    if not answer.found or not yes_no_question(question, plan):
        return None
    a, b = (_clean(side) for side in plan.sides)
    predicate = _predicate(question, plan.sides)
    last = b.rsplit(" ", 1)
    if len(last) == 2 and last[1].lower() in _COUNTRIES and not predicate:
        # "Are both X and Y American?": the question's reading took the demonym into the name.
        b, predicate = last[0], last[1]
    if _TRUNCATED_RE.match(predicate):  # the question's second name was read short
        return None
    sides = _sides(plan.model_copy(update={"sides": (plan.sides[0], b)}), answer)
    if any(not s.sentences for s in sides):
        return None
    text: str
    if _SAME_NATION_RE.search(predicate):
        nation = _decide_nationality(sides)
        if nation is None:
            return None
        yes, used, names = nation
        kind: VerdictKind = "nationality"
        if yes:
            text = f"Yes: {a} and {b} are both {names[0]}."
        else:
            text = f"No: {a} is {names[0]}, {b} is {names[1]}."
    elif _SAME_YEAR_RE.search(predicate) or _BEFORE_AFTER_RE.search(predicate):
        dated = _decide_year(predicate, sides)
        if dated is None:
            return None
        yes, used, years = dated
        kind = "year"
        text = f"{'Yes' if yes else 'No'}: {years[0]} for {a}, {years[1]} for {b}."
    elif _BE_RE.match(question):
        both = _decide_both(predicate, sides)
        if both is None:
            return None
        yes, used, said = both
        kind = "both"
        if yes:
            text = f"Yes: both {a} and {b} are {_without_both(predicate)}."
        else:
            place, first, second = said
            wrong = [(n, o) for n, o in ((a, first), (b, second)) if o]
            text = (
                "No: "
                + "; ".join(f"{n} is given as {_display(o)}, not {_display(place)}" for n, o in wrong)
                + "."
            )
    else:
        return None
    numbers = tuple(sorted({n for s in used for n in s.citations}))
    return Verdict(yes=yes, kind=kind, sentence=AnswerSentence(text=text, citations=numbers))


def _clean(side: str) -> str:
    return " ".join(side.replace('"', " ").replace("“", " ").replace("”", " ").split()).strip(" ,")


def _without_both(predicate: str) -> str:
    return " ".join(w for w in predicate.split() if w.lower() != "both")


def _display(place: str) -> str:
    if place in _US_STATES:
        return place.title()
    names = {c: n for n, c in reversed(list(_COUNTRIES.items()))}
    return names.get(place, place).title()


def with_verdict(question: str, plan: Plan, answer: Answer) -> Answer:
    """The answer opening with its verdict, when its cited sentences decide one."""
    verdict = derive(question, plan, answer)
    if verdict is None:
        return answer
    opening = AnswerSection(collection="", sentences=(verdict.sentence,))
    return answer.model_copy(update={"sections": (opening, *answer.sections), "verdict": verdict.yes})
