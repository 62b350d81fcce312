"""Lexical helpers shared by the backends and the research graph: words, terms, sentences."""

import re
from collections.abc import Iterable

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either few for
    from further had has have having he her here hers herself him himself his how i if in into is
    it its itself just me might more most must my myself no nor not now of off on once only or
    other ought our ours ourselves out over own same shall she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    upon us very was we were what when where which while who whom whose why will with within
    without would you your yours yourself yourselves tell know please give show find explain
    describe say says said get got let lets like
    """.split()
)

_SUFFIXES = ("ies", "ing", "ed", "es", "s")


def words(text: str) -> list[str]:
    """Lower-cased word tokens, apostrophes folded away."""
    return [w.replace("’", "'").replace("'", "") for w in _WORD_RE.findall(text.lower())]


def stem(word: str) -> str:
    """A light, predictable suffix stripper for lexical matching (not for display)."""
    if len(word) <= 4 or word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix == "ies":
                return base + "y"
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                return base[:-1]
            if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                return base + "e"
            return base
    return word


def terms(text: str) -> list[str]:
    """Content words in order of appearance, without stopwords, duplicates kept."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def stems(text: str) -> set[str]:
    return {stem(t) for t in terms(text)}


def unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "ms.", "dr.", "st.", "no.", "inc.")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; list items and lines without end punctuation stand alone."""
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)", text):
        block = " ".join(block.split())
        block = re.sub(r"^(?:[-*•]|\d+[.)])\s+", "", block)
        if not block:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(block):
            candidate = block[start : match.start()].strip()
            last_word = candidate.rsplit(" ", 1)[-1].lower()
            if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]\.", last_word):
                continue
            if candidate:
                sentences.append(candidate)
            start = match.end()
        tail = block[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences
