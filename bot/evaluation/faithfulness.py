"""A faithfulness suite built from a corpus, graded independently of the verifier.

Each case is a sentence of a passage, kept true or changed once in a known way (negation, number,
name, quantifier, comparative, swapped roles). Whether a case is true is known from how it was
built, not from any check Confer runs, so the suite measures the verifier rather than trusting it:
per kind, how many changed sentences it catches and how many true ones it keeps.
"""

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from retrieval.text import STOPWORDS, split_sentences

Kind = Literal["negation", "number", "name", "quantifier", "comparative", "roles"]
KINDS: tuple[Kind, ...] = ("negation", "number", "name", "quantifier", "comparative", "roles")

_AUX = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|should|must|does|did)\b(?! not\b)")
_AUX_NOT = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|should|must|does|did) not\b")
_DIGITS = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_WORD_NUMBERS = "one two three four five six seven eight nine ten eleven twelve".split()
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.I)
_UNIT_SWAPS = {"days": "weeks", "weeks": "months", "months": "years", "years": "months",
               "hours": "days", "minutes": "hours", "percent": "times", "miles": "kilometres",
               "kilometres": "miles"}  # fmt: skip
_ARTICLE = re.compile(r"\b(a|an|the)\b(?= [a-z])")
_OPPOSITES = {"older": "younger", "younger": "older", "before": "after", "after": "before",
              "more": "fewer", "fewer": "more", "larger": "smaller", "smaller": "larger",
              "earlier": "later", "later": "earlier", "higher": "lower", "lower": "higher",
              "greater": "smaller", "longer": "shorter", "shorter": "longer", "less": "more"}  # fmt: skip
_NATIONALITIES = ("American", "British", "French", "German", "Spanish", "Dutch", "Italian", "Canadian")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_CAPITALISED = re.compile(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_ONE_LIST = re.compile(r"(?:\s|,|;|/|&|\band\b|\bor\b)*")


@dataclass(frozen=True)
class Case:
    kind: Kind | None  # None: the true sentence
    sentence: str
    passage: str


def _negate(sentence: str) -> str | None:
    undone = _AUX_NOT.search(sentence)
    if undone:
        return sentence[: undone.start()] + undone.group(1) + sentence[undone.end() :]
    aux = _AUX.search(sentence)
    if aux:
        return sentence[: aux.end()] + " not" + sentence[aux.end() :]
    return None


def _change_number(sentence: str) -> str | None:
    for unit, other in _UNIT_SWAPS.items():
        match = re.search(r"\b(\d+|" + "|".join(_WORD_NUMBERS) + r") " + unit + r"\b", sentence)
        if match:
            return sentence[: match.start()] + match.group(1) + " " + other + sentence[match.end() :]
    digits = _DIGITS.search(sentence)
    if digits:
        value = digits.group().replace(",", "")
        changed = str(int(float(value)) + 2) if "." not in value else str(float(value) + 1.5)
        return sentence[: digits.start()] + changed + sentence[digits.end() :]
    word = _NUMBER_WORD.search(sentence)
    if word:
        index = _WORD_NUMBERS.index(word.group().lower())
        other = _WORD_NUMBERS[(index + 2) % len(_WORD_NUMBERS)]
        return sentence[: word.start()] + other + sentence[word.end() :]
    return None


def _change_name(sentence: str, names: Sequence[str]) -> str | None:
    for nationality in _NATIONALITIES:
        if re.search(rf"\b{nationality}\b", sentence):
            swap = next(n for n in _NATIONALITIES if n != nationality)
            return re.sub(rf"\b{nationality}\b", swap, sentence, count=1)
    match = _NAME.search(sentence)
    if not match:
        return None
    other = next((n for n in names if n not in sentence and n.split()[0] != match.group().split()[0]), None)
    if other is None:
        return None
    return sentence[: match.start()] + other + sentence[match.end() :]


def _add_quantifier(sentence: str) -> str | None:
    if re.search(r"\bonly\b", sentence, re.I):
        return None
    article = _ARTICLE.search(sentence)
    if article:
        return sentence[: article.start()] + "the only" + sentence[article.end() :]
    aux = _AUX.search(sentence)
    if aux:
        return sentence[: aux.end()] + " always" + sentence[aux.end() :]
    return None


def _flip_comparative(sentence: str) -> str | None:
    for word, opposite in _OPPOSITES.items():
        if re.search(rf"\b{word}\b", sentence):
            return re.sub(rf"\b{word}\b", opposite, sentence, count=1)
    return None


def _swap_roles(sentence: str) -> str | None:
    """Two names in different roles exchanged, each where the other stood ("Smith succeeded Jones"
    → "Jones succeeded Smith"). Names side by side in one list share a role ("Smith and Jones
    founded it" says the same either way), and a name is never changed inside a longer one."""
    first: dict[str, tuple[int, int]] = {}
    for match in _NAME.finditer(sentence):
        first.setdefault(match.group(), match.span())
    names = list(first.items())
    for i, (a, (a_start, a_end)) in enumerate(names):
        for b, (b_start, b_end) in names[i + 1 :]:
            if a in b or b in a or b_start < a_end:
                continue
            if _ONE_LIST.fullmatch(_CAPITALISED.sub("", sentence[a_end:b_start])):
                continue  # items of one list
            return sentence[:a_start] + b + sentence[a_end:b_start] + a + sentence[b_end:]
    return None


def mutate(sentence: str, kind: Kind, names: Sequence[str] = ()) -> str | None:
    """The sentence changed once in the given way, or ``None`` if it offers nothing to change."""
    if kind == "negation":
        changed = _negate(sentence)
    elif kind == "number":
        changed = _change_number(sentence)
    elif kind == "name":
        changed = _change_name(sentence, names)
    elif kind == "quantifier":
        changed = _add_quantifier(sentence)
    elif kind == "comparative":
        changed = _flip_comparative(sentence)
    else:
        changed = _swap_roles(sentence)
    return changed if changed and changed != sentence else None


def corpus_names(texts: Iterable[str]) -> list[str]:
    """Capitalised names that occur inside sentences of the corpus (candidates for a swap)."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in _NAME.finditer(text):
            if match.group().lower() not in STOPWORDS:
                seen[match.group()] = None
    return list(seen)


def build_suite(texts: Sequence[str], *, per_kind: int = 200, true: int = 1000) -> list[Case]:
    """Up to ``true`` true sentences of the passages and, for each kind, up to ``per_kind`` changed
    ones; passages are visited in a fixed shuffled order, so every part of a corpus is sampled."""
    names = corpus_names(texts)
    cases: list[Case] = []
    counts = dict.fromkeys(KINDS, 0)
    kept = 0
    order = list(texts)
    random.Random(0).shuffle(order)
    for text in order:
        for sentence in split_sentences(text):
            if len(sentence.split()) < 5:
                continue
            if kept < true:
                kept += 1
                cases.append(Case(None, sentence, text))
            for kind in KINDS:
                if counts[kind] >= per_kind:
                    continue
                changed = mutate(sentence, kind, names)
                if changed is not None:
                    counts[kind] += 1
                    cases.append(Case(kind, changed, text))
    return cases


def grade(cases: Sequence[Case], accepts: Callable[[str, str], bool]) -> dict[str, dict[str, float | int]]:
    """Per kind, how many changed sentences ``accepts(sentence, passage)`` let through (``slipped``)
    out of ``total``; for true sentences (kind ``true``), how many were ``kept``."""
    report: dict[str, dict[str, float | int]] = {}
    for kind in ("true", *KINDS):
        chosen = [c for c in cases if (c.kind or "true") == kind]
        passed = sum(accepts(c.sentence, c.passage) for c in chosen)
        if kind == "true":
            report[kind] = {
                "total": len(chosen),
                "kept": passed,
                "rate": round(passed / len(chosen), 4) if chosen else 0.0,
            }
        else:
            caught = len(chosen) - passed
            report[kind] = {
                "total": len(chosen),
                "slipped": passed,
                "caught_rate": round(caught / len(chosen), 4) if chosen else 0.0,
            }
    return report
