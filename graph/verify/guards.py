"""Deterministic guards for model-written sentences: they never trust the model.

A sentence is compared with the passages it cites, and in particular with its *anchors*: the few
passage sentences that together explain its words (greedy cover by shared stems). Word overlap
alone lets a sentence keep the words and change the meaning, so each guard looks at one kind of
change a copied sentence can carry:

- ``number``: every value (digits, number words, ordinals, percentages, with a unit when one
  follows) is stated in the passages, and no value of the anchor is swapped for another;
- ``negation``: a word negated in the sentence is negated in the anchor, and the other way round;
- ``name``: every capitalised word (people, places, organisations, works, nationalities) is in the
  passages, and no name of the anchor is swapped for another;
- ``roles``: no two names of an anchor in each other's places ("Smith succeeded Jones" for "Jones
  succeeded Smith"; ``graph.verify.roles``);
- ``quantifier``: "only", "all", "every", "never", "first", superlatives … are in the anchors;
- ``comparative``: "older", "before", "more" … are in the anchors.

A model sentence opening with a bare verdict ("Yes, …", "No: …") is ``unsupported``: no passage
says yes or no to the question; the only verdict an answer carries is the one Confer derives from
its verified sentences (``graph.answer.verdict``).

``check`` returns the first failing reason, or ``None`` when every guard passes.
"""

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from graph.verify.roles import roles_ok
from retrieval.language import detect_language
from retrieval.names import is_name_word, name_words
from retrieval.text import STOPWORDS, split_sentences, stem, stems, words

Reason = Literal["unsupported", "number", "negation", "name", "roles", "quantifier", "comparative", "judge"]
REASONS: tuple[Reason, ...] = (
    "unsupported",
    "number",
    "negation",
    "name",
    "roles",
    "quantifier",
    "comparative",
    "judge",
)

SUPPORT_THRESHOLD = 0.6
_VERDICT_RE = re.compile(r"^\W*(yes|no)\s*[,:;.!—–-]", re.IGNORECASE)

_TOKEN = re.compile(r"[$€£]?\d+(?:[.,]\d+)*(?:st|nd|rd|th|s)?%?|[^\W\d_]+(?:['’][^\W\d_]+)?|%")

_UNITS = {
    "second": "second", "minute": "minute", "hour": "hour", "day": "day", "week": "week",
    "month": "month", "year": "year", "decade": "decade", "century": "century", "centuries": "century",
    "percent": "percent", "per": "percent", "%": "percent",
    "km": "km", "kilometre": "km", "kilometer": "km", "mile": "mile", "metre": "metre", "meter": "metre",
    "m": "metre", "cm": "cm", "mm": "mm", "kg": "kg", "kilogram": "kg", "gram": "gram", "g": "gram",
    "pound": "pound", "lb": "pound", "ton": "ton", "tonne": "ton", "litre": "litre", "liter": "litre",
    "dollar": "dollar", "euro": "euro", "cent": "cent", "gb": "gb", "mb": "mb", "tb": "tb",
    "ms": "ms", "person": "person", "people": "person", "times": "times",
}  # fmt: skip
_CURRENCY = {"$": "dollar", "€": "euro", "£": "pound"}

_CARDINALS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "dozen": 12}
_ORDINALS = {
    w: i
    for i, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), 1
    )
}
_ORDINALS.update({"twentieth": 20, "thirtieth": 30, "hundredth": 100})

_NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor without cannot cant dont doesnt didnt isnt wasnt
    werent arent couldnt wouldnt shouldnt wont hasnt havent hadnt nowhere""".split()
)
_QUANTIFIERS = frozenset(
    """only all every everyone everything never always none first last sole solely entire entirely
    each any whole exclusively unique uniquely single most least best worst""".split()
)
_NOT_SUPERLATIVE = frozenset(
    """interest forest test request west honest modest suggest protest contest harvest guest nest rest
    manifest invest arrest quest digest chest priest conquest earnest pest lest inquest attest
    unrest latest""".split()
)
_COMPARATIVES = frozenset(
    """older younger elder before after earlier later more fewer less greater larger smaller bigger
    higher lower longer shorter faster slower better worse prior since until than exceed exceeds
    exceeded outnumber outnumbered""".split()
)
_STARTERS = frozenset(
    """however although though today yesterday later meanwhile despite additionally furthermore
    moreover finally instead still yet thus therefore hence nevertheless many several both another
    according unlike like""".split()
)
_COMPARATIVE_ER = re.compile(r"^[a-z]{3,}er$")


@dataclass(frozen=True)
class Value:
    number: float
    ordinal: bool
    unit: str | None


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _digit_value(token: str) -> tuple[float, bool] | None:
    body = token.lstrip("$€£").rstrip("%")
    ordinal = body.endswith(("st", "nd", "rd", "th"))
    body = re.sub(r"(st|nd|rd|th|s)$", "", body)
    if "," in body and re.fullmatch(r"\d{1,3}(,\d{3})+", body):
        body = body.replace(",", "")
    body = body.replace(",", ".")
    try:
        return float(body), ordinal
    except ValueError:
        return None


def values(text: str) -> list[Value]:
    """Every stated value, normalised: ``three``, ``3`` → 3; ``third``, ``3rd`` → ordinal 3;
    ``18 months`` → 18 month; ``5 million`` → 5000000; ``40 %``/``40 percent`` → 40 percent."""
    toks = tokens(text)
    lower = [t.lower().replace("’", "").replace("'", "") for t in toks]
    found: list[Value] = []
    i = 0
    while i < len(toks):
        word = lower[i]
        number: float | None = None
        ordinal = False
        unit: str | None = None
        if word[:1] in _CURRENCY and len(word) > 1:
            unit = _CURRENCY[word[0]]
        if word[:1].isdigit() or (word[:1] in _CURRENCY and len(word) > 1):
            parsed = _digit_value(word)
            if parsed is not None:
                number, ordinal = parsed
                if word.endswith("%"):
                    unit = "percent"
            i += 1
        elif word in _CARDINALS or word in _TENS or word in _ORDINALS:
            total = 0.0
            while i < len(toks) and (lower[i] in _CARDINALS or lower[i] in _TENS or lower[i] in _SCALES):
                w = lower[i]
                if w in _SCALES:
                    total = max(total, 1.0) * _SCALES[w]
                else:
                    total += _CARDINALS.get(w, _TENS.get(w, 0))
                i += 1
            if i < len(toks) and lower[i] in _ORDINALS and (total or word in _ORDINALS):
                total += _ORDINALS[lower[i]]
                ordinal = True
                i += 1
            number = total
        else:
            i += 1
            continue
        if number is None:
            continue
        while i < len(toks) and lower[i] in _SCALES:
            number *= _SCALES[lower[i]]
            i += 1
        if unit is None and i < len(toks):
            nxt = lower[i]
            unit = _UNITS.get(nxt) or _UNITS.get(stem(nxt)) or _UNITS.get(nxt.rstrip("s"))
            if nxt == "per" and not (i + 1 < len(toks) and lower[i + 1] == "cent"):
                unit = None
        found.append(Value(number, ordinal, unit))
    return found


def _value_stated(value: Value, stated: Sequence[Value]) -> bool:
    for other in stated:
        if other.number != value.number or other.ordinal != value.ordinal:
            continue
        if value.unit is None or other.unit is None or other.unit == value.unit:
            return True
    return False


def _words(text: str) -> list[str]:
    return [t.lower().replace("’", "").replace("'", "") for t in tokens(text)]


def _names(text: str, *, foreign: bool = False) -> set[str]:
    """The words of the names in ``text`` (``retrieval.names``), without number words. In English
    every capitalised word that may be part of a name counts, the sentence's first too (a guard
    would rather check a word too many); in another language the first does not, and in German
    (which capitalises every noun) only runs of capitalised words and acronyms do."""
    if foreign:
        found = name_words(text, language=detect_language(text))
    else:
        found = {w for token in tokens(text) if is_name_word(token) for w in words(token)}
    return {w for w in found if w not in _CARDINALS and w not in _ORDINALS}


@lru_cache(maxsize=4096)
def _passage_sentences(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((s, frozenset(stems(s))) for s in (split_sentences(text) or [text]))


def _folded(text: str) -> str:
    return " ".join(text.split()).rstrip(".!?;: ")


@lru_cache(maxsize=4096)
def _whole_sentences(text: str) -> frozenset[str]:
    return frozenset(_folded(s) for s in (split_sentences(text) or [text]))


def is_quoted(sentence: str, passage_texts: Iterable[str]) -> bool:
    """``sentence`` is, whitespace and end punctuation aside, a whole sentence of one of the
    passages (what an extractive answer says): there is no change for a guard to find."""
    wanted = _folded(sentence)
    return bool(wanted) and any(wanted in _whole_sentences(text) for text in passage_texts)


@dataclass(frozen=True)
class Anchors:
    """``primary``: the best-overlapping passage sentences (all of them on a tie); ``all``: those
    plus, greedily, the ones adding at least two stems of the sentence not yet covered."""

    primary: tuple[str, ...]
    all: tuple[str, ...]


def anchors(sentence: str, passage_texts: Iterable[str], limit: int = 3) -> Anchors:
    wanted = stems(sentence)
    candidates = [c for text in passage_texts for c in _passage_sentences(text)]
    if not candidates or not wanted:
        return Anchors((), ())
    best = max(len(own & wanted) for _, own in candidates)
    primary = [s for s, own in candidates if len(own & wanted) == best and best > 0]
    chosen = list(primary)
    covered = set().union(*(own for s, own in candidates if s in chosen)) & wanted
    while len(chosen) < limit:
        gain, pick = max(
            ((len((own & wanted) - covered), s) for s, own in candidates if s not in chosen), default=(0, "")
        )
        if gain < 2:
            break
        chosen.append(pick)
        covered |= stems(pick) & wanted
    return Anchors(tuple(primary), tuple(chosen))


def support(sentence: str, passage_texts: Iterable[str]) -> float:
    """Share of the sentence's content stems found in the cited passages (1.0 for a quote)."""
    sentence_stems = stems(sentence)
    if not sentence_stems:
        return 0.0
    found: set[str] = set()
    for text in passage_texts:
        found |= stems(text)
    return len(sentence_stems & found) / len(sentence_stems)


def numbers_ok(sentence: str, texts: Sequence[str], anchor: Sequence[str]) -> bool:
    """Every value stated in the passages; against the primary anchor, no value replaced by
    another (a value the anchor lacks, or says fewer times, while one of the anchor's is missing)."""
    own = values(sentence)
    if not own:
        return True
    stated = [v for text in texts for v in values(text)]
    if not all(_value_stated(v, stated) for v in own):
        return False
    anchored = [v for a in anchor for v in values(a)]
    unmatched = list(anchored)
    foreign = []
    for v in own:
        match = next((i for i, other in enumerate(unmatched) if _value_stated(v, [other])), None)
        if match is None:
            foreign.append(v)
        else:
            unmatched.pop(match)
    missing = [v for v in anchored if not _value_stated(v, own)]
    return not (foreign and missing)


def _cues(words: Sequence[str]) -> list[int]:
    return [
        i
        for i, w in enumerate(words)
        if w in _NEGATIONS and not (w == "not" and i + 1 < len(words) and words[i + 1] == "only")
    ]


def _polarity(words: Sequence[str]) -> dict[str, bool]:
    """Each content stem → whether it is negated: an odd number of negations among the four
    words before it ("not on call" negated, "nobody is not on call" asserted)."""
    cues = _cues(words)
    result: dict[str, bool] = {}
    for i, word in enumerate(words):
        if word in STOPWORDS or word in _NEGATIONS:
            continue
        negated = sum(1 for c in cues if i - 4 <= c < i) % 2 == 1
        key = stem(word)
        result[key] = result.get(key, False) or negated
    return result


def _negation_ok(sentence: str, anchor: Sequence[str]) -> bool:
    """No word negated in the sentence that the anchors assert or the other way round, and no
    more negations than the anchors state."""
    own_words = _words(sentence)
    own = _polarity(own_words)
    stated: dict[str, bool] = {}
    cue_count = 0
    for a in anchor:
        words = _words(a)
        cue_count += len(_cues(words))
        for key, negated in _polarity(words).items():
            stated[key] = stated.get(key, False) or negated
    if len(_cues(own_words)) > cue_count:
        return False
    return all(stated.get(key, negated) == negated for key, negated in own.items())


def names_ok(sentence: str, texts: Sequence[str], anchor: Sequence[str], *, foreign: bool = False) -> bool:
    """Every name in the passages; against the primary anchor, no name replaced by another (a
    name the anchor lacks while one of the anchor's names is missing or said fewer times)."""
    own = _names(sentence, foreign=foreign)
    if not own:
        return True
    known = {w for text in texts for w in words(text)}
    if not own <= known:
        return False
    anchor_words = Counter(w for a in anchor for w in words(a))
    own_words = Counter(words(sentence))
    lowercase = {w for text in texts for t in tokens(text) if t[:1].islower() for w in words(t)}
    anchor_names = {w for a in anchor for w in _names(a)} - lowercase - _STARTERS
    extra = {n for n in own if own_words[n] > anchor_words[n]}
    missing = {n for n in anchor_names if own_words[n] < anchor_words[n]}
    return not (extra and missing)


def _is_superlative(word: str) -> bool:
    return len(word) > 5 and word.endswith("est") and word not in _NOT_SUPERLATIVE


def _backed(sentence: str, anchor: Sequence[str], flagged: Callable[[Sequence[str], int], bool]) -> bool:
    """Every flagged word of the sentence is said in the anchors at least as often."""
    words = _words(sentence)
    anchor_words = Counter(w for a in anchor for w in _words(a))
    own = Counter(w for i, w in enumerate(words) if flagged(words, i))
    return all(anchor_words[w] >= n for w, n in own.items())


def _quantifier(words: Sequence[str], i: int) -> bool:
    return words[i] in _QUANTIFIERS or _is_superlative(words[i])


def _comparative(words: Sequence[str], i: int) -> bool:
    word = words[i]
    return word in _COMPARATIVES or (
        _COMPARATIVE_ER.match(word) is not None and i + 1 < len(words) and words[i + 1] == "than"
    )


def check(sentence: str, passage_texts: Iterable[str], threshold: float = SUPPORT_THRESHOLD) -> Reason | None:
    """The first guard the sentence fails against its cited passages, or ``None`` (at once for a
    whole sentence of a cited passage: the guards look for changes, and a quote has none)."""
    texts = list(passage_texts)
    if is_quoted(sentence, texts):
        return None
    if _VERDICT_RE.match(sentence):
        return "unsupported"
    if support(sentence, texts) < threshold:
        return "unsupported"
    anchor = anchors(sentence, texts)
    if not numbers_ok(sentence, texts, anchor.primary):
        return "number"
    if not _negation_ok(sentence, anchor.all):
        return "negation"
    if not names_ok(sentence, texts, anchor.primary):
        return "name"
    if not roles_ok(sentence, anchor.all):
        return "roles"
    if not _backed(sentence, anchor.all, _quantifier):
        return "quantifier"
    if not _backed(sentence, anchor.all, _comparative):
        return "comparative"
    return None
