"""Reading a question: ``in:a,b`` targets, and what kind of question it is."""

import re

from graph.models import QuestionKind
from retrieval.text import terms

_IN_RE = re.compile(r"(?<!\S)in:([A-Za-z0-9_,-]*)(?!\S)")
_GREETING_RE = re.compile(
    r"^\s*(hi|hello|hey|hiya|yo|good (morning|afternoon|evening)|howdy)\b"
    r"[\s!.,]*(there|confer|all|team)?[\s!.,]*$",
    re.IGNORECASE,
)
_THANKS_RE = re.compile(
    r"^\s*(thanks|thank you|thx|ty|cheers|great,? thanks)\b[\s\w!.,]{0,20}$", re.IGNORECASE
)
_HELP_RE = re.compile(r"^\s*(help|\?|what can you do\??|how do i use (you|this)\??|usage)\s*$", re.IGNORECASE)
_COMPARE_RE = re.compile(
    r"\b(differ|differs|difference|differences|compare|compared|comparison|versus|vs\.?|contrast|"
    r"both|same as|similar|unlike|whereas)\b|\bwhich (one|is|was|has|had|came|were|are|did)\b.*\bor\b",
    re.IGNORECASE,
)
_EXPLORE_RE = re.compile(
    r"^\s*(what are (the|our)|overview|summari[sz]e|tell me about|explain|describe|list|how does)\b",
    re.IGNORECASE,
)


def extract_targets(text: str) -> tuple[str, tuple[str, ...]]:
    """Remove every ``in:a,b`` from the text; return the rest and the named collections."""
    names: list[str] = []
    for match in _IN_RE.finditer(text):
        names.extend(n.strip().lower() for n in match.group(1).split(",") if n.strip())
    remaining = " ".join(_IN_RE.sub(" ", text).split())
    return remaining, tuple(dict.fromkeys(names))


def classify_question(text: str) -> QuestionKind:
    if not terms(text) or _HELP_RE.match(text):
        return "help"
    if _GREETING_RE.match(text):
        return "greeting"
    if _THANKS_RE.match(text):
        return "thanks"
    if _COMPARE_RE.search(text):
        return "comparative"
    if _EXPLORE_RE.match(text):
        return "exploratory"
    return "factual"


_SIDES_PATTERNS = (
    re.compile(r"\bbetween (?P<a>.+?) and (?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    re.compile(r"^(?:which|who|what)\b[^,]*,\s*(?P<a>.+?)\s+or\s+(?P<b>.+?)[?.!]*$", re.IGNORECASE),
    re.compile(r"\bcompare\s+(?P<a>.+?)\s+(?:and|with|to)\s+(?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    re.compile(
        r"^(?:how|in what way)s?\s+(?:do|does|did)\s+(?:the\s+)?(?P<a>.+?)\s+and\s+"
        r"(?:the\s+)?(?P<b>.+?)\s+(?:differ|compare)\b",
        re.IGNORECASE,
    ),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)[?.!]*$", re.IGNORECASE),
    re.compile(
        r"^(?:are|were|is|was|do|does|did)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+"
        r"(?:both|the same|of the same|from the same)\b",
        re.IGNORECASE,
    ),
)


def comparison_sides(text: str) -> tuple[str, ...]:
    """The two things compared, when the sentence shape makes them clear; else nothing."""
    for pattern in _SIDES_PATTERNS:
        match = pattern.search(text.strip())
        if match:
            sides = tuple(" ".join(match.group(k).strip(" ,;:\"'").split()) for k in ("a", "b"))
            if all(terms(side) for side in sides):
                return sides
    return ()
