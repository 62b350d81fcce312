"""Yes/no verdicts for comparison questions, derived from the answer's own cited sentences.

"Were X and Y of the same nationality?" is answered by two quoted sentences, one a side; the
verdict ("Yes: …" / "No: …") is the sentence Confer derives from them. It is stated only when
each side's own sentence decides it, with attribute values of one type compared exactly:

- ``nationality``: "same nationality" / "same country": the nationality a side's sentence gives
  its subject after "is" / "was" (demonyms and country names, "Polish-American" is both, a
  "Russian-born" is neither, "North American" is a region, not a nationality); same sets say yes,
  disjoint sets say no, anything else nothing;
- ``year``: "released in the same year", "formed before 2010": the year a side's sentence gives
  (after the question's verb when the sentence has it, else its only year);
- ``director``: "directed by the same person": the names after "directed by" / "a film by";
  the same names say yes, names sharing no word say no;
- ``family``: "in the same family": the one Latin family name (…aceae, …idae) each sentence gives;
- ``place``: "in the same state / province / city": one US state; "<Name> province" with its
  country; a city as "in <City>, <state or country>"; different ones say no;
- ``genre``: "same / different genres": the words before "film" / "band" / … ("a 2003 Danish
  documentary film"); only the same words decide (a film may be of two genres);
- ``both``: "Are X and Y both <words>?": yes when each side's sentence carries every content word
  of the predicate, a kind also in narrower words (a "guitarist" is a musician, a "novelist" a
  writer), a US state putting it in America; a "yes" may also come from a later "It is …"
  sentence of the side's own passage, or for a maker's role ("film directors") from a work's
  sentence that credits the side ("… a 1954 film directed by X"); no only when a side's own
  sentence gives a country or US state of the predicate's kind and not the predicate's one;
  "Is X a P and Y a Q?" reads each side against its own predicate the same way.

A side's own sentences open with its name, or open its passage (the passage titled with its
name, with or without "is"). Anything else (a negated sentence, a side without a sentence, a
predicate the rules cannot read) gives no verdict: a wrong verdict is worse than none. The
verdict cites exactly the sentences that decided it and never adds a fact they do not state.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from graph.models import Answer, AnswerSection, AnswerSentence, Plan
from retrieval.passages import Passage
from retrieval.text import STOPWORDS, stems, words

VerdictKind = Literal["nationality", "year", "both", "director", "family", "place", "genre"]

# Demonyms and country names, each to one country (the UK's nations to the UK: "English" and
# "British" are the same nationality).
_COUNTRIES: dict[str, str] = {}
for _country, _names in {
    "us": "American|United States|USA|U.S.|America",
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
# Parts of the world larger than a country, each to one name: read as themselves, so "South
# American" is not "American", and never taken for a nationality.
_REGIONS: dict[str, str] = {}
for _region, _names in {
    "Africa": "Africa|African",
    "Asia": "Asia|Asian",
    "Europe": "Europe|European",
    "Oceania": "Oceania|Oceanian",
    "North America": "North America|North American",
    "South America": "South America|South American",
    "Central America": "Central America|Central American",
    "Latin America": "Latin America|Latin American",
    "the Americas": "the Americas",
    "the Middle East": "Middle East|Middle Eastern",
}.items():
    for _name in _names.split("|"):
        _REGIONS[_name.lower()] = _region
# Longest names first, so "South African" is read before "African" would be.
_PLACE_RE = re.compile(
    r"(?<!\w)("
    + "|".join(re.escape(n) for n in sorted({*_COUNTRIES, *_US_STATES, *_REGIONS}, key=len, reverse=True))
    + r")(-born|-based)?(?![\w])",
    re.IGNORECASE,
)
_PRONOUN_RE = re.compile(r"^(It|They)\s+(is|was|are|were)\b")
_ROLES = {"written": "writer", "directed": "director", "produced": "producer", "composed": "composer"}
# "written and directed by A and B", the list of makers ending where the sentence goes on.
_CREDIT_RE = re.compile(
    r"\b((?:(?:co-)?(?:written|directed|produced|composed)(?:,\s*|\s+and\s+))*"
    r"(?:co-)?(?:written|directed|produced|composed))\s+by\s+([^.;:()\"“”]+)"
)
_MAKERS_END_RE = re.compile(
    r"\b(?:starring|featuring|with|for|from|based|about|which|who|that|in|on|at|as|under|released)\b"
    r"|,\s*(?!and\b)[a-z]"
)
_FILM_RE = re.compile(r"\b(film|movie|documentary)\b", re.IGNORECASE)
# A kind a "both" predicate may name, and the narrower words a sentence may say it with ("a
# guitarist" is a musician; "a singer" is not said to be one).
_NARROWER: dict[str, frozenset[str]] = {
    min(stems(kind)): frozenset(stems(narrower))
    for kind, narrower in {
        "musician": """guitarist keyboardist drummer bassist pianist violinist cellist saxophonist
        trumpeter percussionist organist composer instrumentalist""",
        "writer": "novelist poet playwright screenwriter essayist author journalist biographer columnist",
        "author": "novelist poet playwright essayist biographer",
        "actor": "actress",
    }.items()
}
_SUBJECT_RE = re.compile(r"\s*\(.*\)\s*$")  # a title's parenthesis: "Ed Wood (film)"
_TRUNCATED_RE = re.compile(r"^(by|of|the|de|da|la|le|von|van|and|&)\s+[A-Z0-9]")  # "Dead | by Sunrise"
_COPULA_RE = re.compile(r"\b(is|was|are|were)\b")
_OTHERS_YEAR_RE = re.compile(r"(?:\b(?:the|his|her|its|their)|'s)\s+$")  # "the 1960 novel"
_YEAR_RE = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d|s)")
_NEGATION_RE = re.compile(r"\b(not|never|no longer|neither|nor)\b|n't\b", re.IGNORECASE)
_YES_NO_RE = re.compile(r"^\s*(are|were|is|was|do|does|did|have|has|had)\b", re.IGNORECASE)
_BE_RE = re.compile(r"^\s*(are|were|is|was)\b", re.IGNORECASE)
_SAME_NATION_RE = re.compile(r"\bsame (nationality|country)\b|\bfrom the same country\b", re.IGNORECASE)
_SAME_YEAR_RE = re.compile(r"\bsame year\b", re.IGNORECASE)
_BEFORE_AFTER_RE = re.compile(r"\b(before|after|prior to)\s+(1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
_SAME_DIRECTOR_RE = re.compile(
    r"\b(directed by|by|share|have) the same (director|filmmaker|person)\b|\bsame (director|filmmaker)\b",
    re.IGNORECASE,
)
_SAME_FAMILY_RE = re.compile(r"\bsame (plant |botanical )?family\b", re.IGNORECASE)
_SAME_PLACE_RE = re.compile(r"\bsame (state|province|city)\b", re.IGNORECASE)
_GENRE_RE = re.compile(r"\b(same|different) (film |music |musical )?genres?\b", re.IGNORECASE)
# "directed by A and B", "a documentary film by A": the directors' names follow.
_DIRECTED_RE = re.compile(r"\b(?:directed|(?:film|documentary|movie) made|film|documentary|movie) by\s+")
_DIRECTOR_TITLE_RE = re.compile(r"^(?:[A-Z][\w-]*\s+)?(?:film\s+)?(?:director|filmmaker)\s+")
_NAME_PARTICLES = frozenset("de da di del della van von der den le la du dos das bin ibn".split())
_FAMILY_NAME_RE = re.compile(r"\b([A-Z][a-z]+(?:aceae|idae))\b")  # Cucurbitaceae, Noctuidae
_PROVINCE_RE = re.compile(r"\b([A-Z][\w-]+) [Pp]rovince\b|\b[Pp]rovince of ([A-Z][\w-]+)")
_CITY_RE = re.compile(r"\bin ([A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*)*), ")
_NOT_CITY_RE = re.compile(r"\b(County|District|Township|Parish|Province|Region|State)$")
# What a genre is read before: "is a 2003 Danish documentary film" gives "documentary".
_GENRE_OF_RE = re.compile(r"\b(?:is|was) (?:an?|the) ([^.,;:()]*?)\b(film|band|album|novel|magazine)\b")
# "Which came first, X or Y?" / "Who is younger, X or Y?": which end of time the question wants.
_WHICH_RE = re.compile(r"^\s*(which|who|what)\b", re.IGNORECASE)
_EARLIER_RE = re.compile(r"\b(older|oldest|earlier|earliest|first)\b", re.IGNORECASE)
# ("later" alone is left out: "Which band, X or Y, later became …" asks about another event.)
_LATER_RE = re.compile(r"\b(younger|youngest|newer|newest|more recent|most recent)\b", re.IGNORECASE)
# "the first to …", "the first Russian composer", "first album": a rank, not the order in time.
_FIRST_RANK_RE = re.compile(
    r"\b(?i:the\s+first)\b|\b(?i:first)\s+(?!(?:or|and|released|founded|formed|established|published|"
    r"built|born|opened|created|launched|started|aired|appeared)\b)[a-z]"
)
_BORN_RE = re.compile(r"\(born\b")
_LIFESPAN_RE = re.compile(r"^[^()]*\((?:[^()]*?\s)?(1[0-9]{3}|20[0-9]{2})\s*[–—-]")  # "X (1882 – 1941)"
_ATTRIBUTIVE_YEAR_RE = re.compile(r"\b(?:is|was) an? (1[0-9]{3}|20[0-9]{2})\b")  # "is a 1986 film"
# "Is Karjiang a mountain and Sherpi Kangri a mountain peak?": two names, each with its own kind.
_PAIRED_RE = re.compile(
    r"^\s*(?i:is|was|are|were)\s+(?P<a>[A-Z0-9\"“][^?]*?)\s+(?:an?|the)\s+(?P<p>[^?]+?)\s+and\s+"
    r"(?P<b>[A-Z0-9\"“][^?]*?)\s+(?:an?|the)\s+(?P<q>[^?]+?)\s*\?*\s*$"
)
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
    centuries decade before after during until first last best worst largest biggest smallest
    oldest youngest tallest highest lowest longest shortest greatest newest earliest latest""".split()
)


@dataclass(frozen=True)
class Side:
    """One compared thing and the answer sentences about it (with their citation numbers):
    ``sentences`` have it as their subject; ``more`` go on about it in its own passage ("It is
    native to Asia."); ``credits`` name it as a work's maker ("… a film directed by X")."""

    name: str
    sentences: tuple[AnswerSentence, ...]
    more: tuple[AnswerSentence, ...] = ()
    credits: tuple[AnswerSentence, ...] = ()


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
        found.append((_COUNTRIES.get(name) or _REGIONS.get(name) or name, bool(match.group(2))))
    return found


def _place_kind(place: str) -> Literal["country", "state", "region"]:
    if place in _US_STATES:
        return "state"
    return "region" if place in _REGIONS.values() else "country"


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


def _sides(plan: Plan, answer: Answer) -> list[Side]:
    """Each side's subject sentences in the answer: the sentences whose subject is the side."""
    by_number = {c.n: c.passage for c in answer.citations}
    result = []
    for name in plan.sides:
        about: list[AnswerSentence] = []
        more: list[AnswerSentence] = []
        credits: list[AnswerSentence] = []
        for section in answer.sections:
            for sentence in section.sentences:
                cited: list[Passage] = [by_number[n] for n in sentence.citations if n in by_number]
                if not cited:
                    continue
                if _subject_sentence(name, sentence.text, cited):
                    about.append(sentence)
                elif _continues(name, sentence.text, cited):
                    more.append(sentence)
                elif credited_roles(name, sentence.text):
                    credits.append(sentence)
        result.append(Side(name=name, sentences=tuple(about), more=tuple(more), credits=tuple(credits)))
    return result


def _subject_sentence(name: str, sentence: str, cited: Sequence[Passage]) -> bool:
    """The sentence is about ``name`` as its subject: it opens with the name ("Local H is …"), or
    it opens a cited passage whose title is the name ("Edward Davis Wood Jr. … was …" under
    "Ed Wood"); a sentence that only mentions the name, or a passage about something named
    after it ("Cypress-pine" for "Cypress"), decides nothing about it."""
    copula = _COPULA_RE.search(sentence)
    if copula is not None:
        head = sentence[: copula.start()].strip()
        head = re.sub(r"^(the|a|an)\s+", "", head, flags=re.IGNORECASE)
        wanted = re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.IGNORECASE).lower()
        # The name, and no more of a longer name after it ("Duke Energy Florida" is not "Duke Energy").
        if head.lower().startswith(wanted) and not re.match(r"[\w-]|\s+[A-Z0-9]", head[len(wanted) :]):
            return True
    # The first sentence of the side's own passage is about it, with or without "is" ("The genus
    # Huernia … consists of …").
    return any(_titled(p, name) and _opening(sentence, p) for p in cited)


def _titled(passage: Passage, name: str) -> bool:
    """The passage is the side's own ("Ed Wood (film)" for "Ed Wood")."""
    return stems(_SUBJECT_RE.sub("", passage.title)) == stems(name)


def _continues(name: str, sentence: str, cited: Sequence[Passage]) -> bool:
    """A later sentence of the side's own passage whose subject is "It" / "They": the passage's
    subject, which is the side ("Dregea is a genus of vines. It is native to Africa.")."""
    return bool(_PRONOUN_RE.match(sentence)) and any(_titled(p, name) and sentence in p.text for p in cited)


def credited_roles(name: str, sentence: str) -> frozenset[str]:
    """The makers' roles the sentence gives ``name`` for a work it describes: "… is a 1986 film
    directed by X" makes X a "director" and a "film director"; "written and directed by X" a
    writer and director. None when the name is not in the list of makers after "by"."""
    roles: set[str] = set()
    for match in _CREDIT_RE.finditer(sentence):
        makers = _MAKERS_END_RE.split(match.group(2), maxsplit=1)[0]
        at = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-]|\s+[A-Z0-9])", makers)
        if at is None or re.search(r"[A-Z][\w.'-]*\s+$", makers[: at.start()]):
            continue
        film = bool(_FILM_RE.search(sentence[: match.start()]))
        for verb in re.findall(r"(written|directed|produced|composed)", match.group(1)):
            roles.add(_ROLES[verb])
            if film:
                roles.add(f"film {_ROLES[verb]}")
    return frozenset(roles)


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
        found = next(((s, y) for s in side.sentences if (y := date_of(s.text, verb)) and _plain(s)), None)
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
    places, its kinds also in narrower words); no when a side's own sentence gives another
    country or US state in place of the predicate's one."""
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
    kind = _place_kind(place) if place else None
    used: list[AnswerSentence] = []
    said: list[str] = []
    holds: list[bool] = []
    for side in sides:
        decided: tuple[AnswerSentence, bool, str] | None = None
        for sentence in side.sentences:
            if not _plain(sentence):
                continue
            named = [p for p, born in places(sentence.text) if kind is not None and _place_kind(p) == kind]
            given = nationality(sentence.text) if kind == "country" else frozenset()
            has_place = _has_place(sentence.text, place)
            if has_place and _carries(sentence.text, needed):
                decided = (sentence, True, "")
                break
            if kind in ("country", "state") and not has_place and (given or named):
                decided = (sentence, False, sorted(given)[0] if given else named[0])
                break
        if decided is None:
            # Only a "yes" is read from the passage's later sentences or from the side's works.
            more = (
                s for s in side.more if _plain(s) and _has_place(s.text, place) and _carries(s.text, needed)
            )
            made = (s for s in side.credits if not place and _plain(s) and _made(side.name, s.text, needed))
            found = next(more, None) or next(made, None)
            decided = (found, True, "") if found is not None else None
        if decided is None:
            return None
        used.append(decided[0])
        holds.append(decided[1])
        said.append(decided[2])
    if all(holds):
        return True, used, []
    return False, used, [place, *said]


def _has_place(text: str, place: str) -> bool:
    """The text names the place (a US state puts it in the United States); no place: true."""
    if not place:
        return True
    named = [p for p, _ in places(text)]
    in_us = place == "us" and any(_place_kind(p) == "state" for p in named)
    return place in named or place in nationality(text) or in_us


def _carries(text: str, needed: set[str]) -> bool:
    """The text has each needed word, or a narrower one for it ("guitarist" for "musician")."""
    have = stems(text)
    return all(n in have or bool(_NARROWER.get(n, frozenset()) & have) for n in needed)


def _made(name: str, text: str, needed: set[str]) -> bool:
    """The predicate is a maker's role ("film directors") the sentence credits the side with."""
    return any(stems(role) == needed for role in credited_roles(name, text))


def derive(question: str, plan: Plan, answer: Answer) -> Verdict | None:
    """The verdict the answer's cited sentences decide, or none."""
    paired = _PAIRED_RE.match(" ".join(question.split()))
    if answer.found and plan.kind == "comparative" and paired is not None:
        return _derive_paired(paired, plan, answer)
    if not answer.found or not yes_no_question(question, plan):
        return None
    a, b = (_side_name(side) for side in plan.sides)
    predicate = _predicate(question, plan.sides)
    last = b.rsplit(" ", 1)
    if len(last) == 2 and last[1].lower() in _COUNTRIES and not predicate:
        # "Are both X and Y American?": the question's reading took the demonym into the name.
        b, predicate = last[0], last[1]
    if _TRUNCATED_RE.match(predicate):
        # The question's second name was read short ("Dead" of "Dead by Sunrise"): in "X and Y
        # both …" the second name runs up to "both"; otherwise nothing is known of it.
        rest = re.match(r"(.+?)\s+(both\b.*)$", predicate, re.IGNORECASE)
        if rest is None:
            return None
        b, predicate = f"{b} {rest.group(1)}", rest.group(2)
    sides = _sides(plan.model_copy(update={"sides": (a, b)}), answer)
    if any(not (s.sentences or s.more or s.credits) for s in sides):
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
    elif _SAME_DIRECTOR_RE.search(predicate):
        directed = _decide_same(sides, directors, _same_people)
        if directed is None:
            return None
        yes, used, values = directed
        kind = "director"
        if yes:
            text = f"Yes: {a} and {b} were both directed by {_people(values[0])}."
        else:
            text = f"No: {a} was directed by {_people(values[0])}, {b} by {_people(values[1])}."
    elif _SAME_FAMILY_RE.search(predicate):
        family = _decide_same(sides, family_of, _same_value)
        if family is None:
            return None
        yes, used, values = family
        kind = "family"
        if yes:
            text = f"Yes: {a} and {b} are both in the family {values[0][0]}."
        else:
            text = f"No: {a} is in the family {values[0][0]}, {b} in the family {values[1][0]}."
    elif same_place := _SAME_PLACE_RE.search(predicate):
        unit = same_place.group(1).lower()
        located = _decide_same(sides, lambda t: place_in(t, unit), _same_place)
        if located is None:
            return None
        yes, used, values = located
        kind = "place"
        if yes:
            text = f"Yes: {_where(values[0])} for both {a} and {b}."
        else:
            text = f"No: {_where(values[0])} for {a}, {_where(values[1])} for {b}."
    elif genre := _GENRE_RE.search(predicate):
        same = _decide_same(sides, genre_of, _same_genre)
        if same is None:
            return None
        equal, used, values = same
        yes = equal == (genre.group(1).lower() == "same")
        kind = "genre"
        text = f"{'Yes' if yes else 'No'}: {a} is {_a(values[0][0])}, {b} is {_a(values[1][0])}."
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


Value = tuple[str, ...]


def _decide_same(
    sides: Sequence[Side],
    read: Callable[[str], Value],
    compare: Callable[[Value, Value], bool | None],
) -> tuple[bool, list[AnswerSentence], list[Value]] | None:
    """Each side's value of one attribute, read from its first plain subject sentence that gives
    one, and whether they are the same (``compare``: none when unsure)."""
    values: list[Value] = []
    used: list[AnswerSentence] = []
    for side in sides:
        found = next(((s, v) for s in side.sentences if _plain(s) and (v := read(s.text))), None)
        if found is None:
            return None
        used.append(found[0])
        values.append(found[1])
    same = compare(values[0], values[1])
    return None if same is None else (same, used, values)


def _same_value(a: Value, b: Value) -> bool | None:
    return a == b


def _same_genre(a: Value, b: Value) -> bool | None:
    """The same genre words: yes; other words need not be another genre (a film is often of two)."""
    return True if a == b else None


def _same_people(a: Value, b: Value) -> bool | None:
    """The same names: yes; no name sharing a word (a surname written another way): no."""
    if a == b:
        return True
    tokens = [{w for n in names for w in n.lower().split() if w not in _NAME_PARTICLES} for names in (a, b)]
    return None if tokens[0] & tokens[1] else False


def _same_place(a: Value, b: Value) -> bool | None:
    """Places read by ``place_in``: a US state, or a city / province with the state or country it
    is in. The same one, known where: yes; differently named, or in different countries or states:
    no; anything else (one name inside the other, a country left unsaid): none."""
    if a == b:
        return True if len(a) == 2 or a[0] in _US_STATES else None
    if a[0].lower() in b[0].lower() or b[0].lower() in a[0].lower():
        return None if len(a) != 2 or len(b) != 2 or a[1] == b[1] else _different_regions(a[1], b[1])
    return False


def _different_regions(a: str, b: str) -> bool | None:
    """Two states, or two countries, differ; a US state and a country other than the US differ."""
    kinds = {_place_kind(a), _place_kind(b)}
    if len(kinds) == 1:
        return False
    country = a if _place_kind(a) == "country" else b
    return False if kinds == {"state", "country"} and country != "us" else None


def directors(sentence: str) -> Value:
    """The director(s) the sentence names after "directed by" ("a film by"), in order; none when
    what follows is not a list of names."""
    match = _DIRECTED_RE.search(sentence)
    if match is None:
        return ()
    rest = _DIRECTOR_TITLE_RE.sub("", sentence[match.end() :])  # "by Canadian director X"
    rest = _MAKERS_END_RE.split(rest, maxsplit=1)[0].strip(" ,.")
    names = []
    for part in re.split(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*", rest):
        tokens = part.split()
        if not tokens or not tokens[0][:1].isupper() or len(tokens) > 5:
            return ()
        if not all(t[:1].isupper() or t in _NAME_PARTICLES for t in tokens):
            return ()
        names.append(" ".join(tokens))
    return tuple(sorted(names))


def family_of(sentence: str) -> Value:
    """The one biological family the sentence names by its Latin name ("family Urticaceae")."""
    names = set(_FAMILY_NAME_RE.findall(sentence))
    return (names.pop(),) if len(names) == 1 else ()


def place_in(sentence: str, unit: str) -> Value:
    """Where the sentence puts its subject, at ``unit``: a state (one US state named), a province
    ("Jiangsu province", with the country when named), a city ("in Buffalo, New York": the city
    and its state or country)."""
    named = [p for p, born in places(sentence) if not born]
    countries = sorted({p for p in named if _place_kind(p) == "country"})
    if unit == "state":
        states = {p for p in named if _place_kind(p) == "state"}
        return (states.pop(),) if len(states) == 1 else ()
    if unit == "province":
        provinces = {a or b for a, b in _PROVINCE_RE.findall(sentence)}
        if len(provinces) != 1 or len(countries) > 1:
            return ()
        return (f"{provinces.pop()} province", *countries)
    cities = set()
    for match in _CITY_RE.finditer(sentence):
        after = _PLACE_RE.match(sentence, match.end())
        city = match.group(1)
        if after is None or after.group(2) or _NOT_CITY_RE.search(city) or places(city):
            continue
        region = places(after.group(0))
        if region and _place_kind(region[0][0]) != "region":
            cities.add((city, region[0][0]))
    return cities.pop() if len(cities) == 1 else ()


def genre_of(sentence: str) -> Value:
    """The genre words the sentence gives its subject before "film" / "band" / … ("a 2003
    Danish documentary film": documentary), and that noun; none when it gives no such words."""
    match = _GENRE_OF_RE.search(sentence)
    if match is None:
        return ()
    genre = [w for w in match.group(1).split() if w[:1].islower() and not any(c.isdigit() for c in w)]
    return (" ".join([*genre, match.group(2)]),) if genre else ()


def _people(value: Value) -> str:
    return " and ".join(value)


def _where(value: Value) -> str:
    """A place read by ``place_in`` as words: "Buffalo, New York", "Jiangsu province" (a city's
    or province's country is compared, not shown)."""
    if value[0] in _US_STATES:
        return _display(value[0])
    if len(value) == 2 and value[1] in _US_STATES:
        return f"{value[0]}, {_display(value[1])}"
    return value[0]


def _a(words: str) -> str:
    return f"{'an' if words[:1].lower() in 'aeiou' else 'a'} {words}"


def _derive_paired(paired: re.Match[str], plan: Plan, answer: Answer) -> Verdict | None:
    """ "Is X a P and Y a Q?": each side's own sentence read against its own predicate, as for
    "both" (yes when each carries its predicate's words; no when one gives another place)."""
    a, b = (_side_name(paired.group(k)) for k in ("a", "b"))
    sides = _sides(plan.model_copy(update={"sides": (a, b)}), answer)
    decided = [_decide_both(paired.group(k), [side]) for k, side in (("p", sides[0]), ("q", sides[1]))]
    if decided[0] is None or decided[1] is None:
        return None
    used = [*decided[0][1], *decided[1][1]]
    if decided[0][0] and decided[1][0]:
        text = f"Yes: {a} is {_a(paired.group('p'))} and {b} is {_a(paired.group('q'))}."
    else:
        wrong = [(n, d[2]) for n, d in ((a, decided[0]), (b, decided[1])) if not d[0]]
        text = (
            "No: "
            + "; ".join(f"{n} is given as {_display(s[1])}, not {_display(s[0])}" for n, s in wrong)
            + "."
        )
    yes = decided[0][0] and decided[1][0]
    numbers = tuple(sorted({n for s in used for n in s.citations}))
    return Verdict(yes=yes, kind="both", sentence=AnswerSentence(text=text, citations=numbers))


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


def _display(place: str) -> str:
    if place in _US_STATES:
        return place.title()
    names = {c: n for n, c in reversed(list(_COUNTRIES.items()))}
    return names.get(place, place).title()


@dataclass(frozen=True)
class Choice:
    """The side a "Which came first, X or Y?" question asks for, and the sentence saying so."""

    side: str
    sentence: AnswerSentence


def choose(question: str, plan: Plan, answer: Answer) -> Choice | None:
    """The earlier (or later) side of a "which came first / who is younger" comparison, when each
    side's own cited sentences give it one year and the years differ; else none."""
    if not answer.found or plan.kind != "comparative" or len(plan.sides) != 2:
        return None
    if not _WHICH_RE.match(question) or _YES_NO_RE.match(question):
        return None
    earlier = bool(_EARLIER_RE.search(question)) and not _FIRST_RANK_RE.search(question)
    later = bool(_LATER_RE.search(question))
    if earlier == later or not all(_whole(question, side) for side in plan.sides):
        return None
    a, b = (_side_name(side) for side in plan.sides)
    verb = next((v for v in _YEAR_VERBS if re.search(rf"\b{v}\b", question, re.IGNORECASE)), "")
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
    text = f"{chosen} {_order(question, verb, earlier)}: {years[0]} for {a}, {years[1]} for {b}."
    numbers = tuple(sorted({n for s in used for n in s.citations}))
    return Choice(side=chosen, sentence=AnswerSentence(text=text, citations=numbers))


def _order(question: str, verb: str, earlier: bool) -> str:
    """The question's own words for the chosen side: "is older", "was born first", "came later"."""
    word = re.search(r"\b(older|younger|newer)\b", question, re.IGNORECASE)
    if word is not None:
        return f"is {word.group(1).lower()}"
    return f"{f'was {verb}' if verb else 'came'} {'first' if earlier else 'later'}"


def _whole(question: str, side: str) -> bool:
    """The side's name is read whole: the question goes on with "or" or ends after it."""
    return bool(re.search(rf"{re.escape(side)}[\"”']?\s*(?:[?.,!]|\s+or\b|$)", question))


def date_of(sentence: str, verb: str) -> int | None:
    """The year a side's sentence dates it by: after the question's verb ("founded") when the
    sentence has it; a person's birth year ("(born …)", "(1882 – 1941)") unless another date is
    asked for; the year of "is a 1986 film"; with no verb in the question, the sentence's only
    year. None when unclear."""
    if verb and re.search(rf"\b{re.escape(verb)}\b", sentence, re.IGNORECASE):
        return year_of(sentence, verb)
    if verb in ("", "born"):  # a person's birth, when no other date is asked for
        if _BORN_RE.search(sentence):
            return year_of(sentence, "born")
        lifespan = _LIFESPAN_RE.search(sentence)
        if lifespan is not None:
            return int(lifespan.group(1))
    attributive = _ATTRIBUTIVE_YEAR_RE.search(sentence)
    if attributive is not None:
        return int(attributive.group(1))
    return None if verb else year_of(sentence, "")


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
