"""Citation checks shared by every answer mode: a cited passage must have been retrieved in this
run and must support the sentence that cites it (lexically, and through the guards of
``graph.verify.guards``: numbers, negation, names, quantifiers, comparatives)."""

import re
from collections.abc import Iterable, Sequence

from graph.verify.guards import SUPPORT_THRESHOLD, Reason, check, support
from retrieval.passages import Passage
from retrieval.text import split_sentences, stems

__all__ = ["SUPPORT_THRESHOLD", "Reason", "check", "support"]
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_MARKER = re.compile(r"\s*\[(\d+)\]")


def numbers_match(sentence: str, passage_texts: Iterable[str]) -> bool:
    """Every number in the sentence appears in the cited text: invented figures fail."""
    wanted = {n.replace(",", "") for n in _NUMBER.findall(sentence)}
    if not wanted:
        return True
    present = {n.replace(",", "") for text in passage_texts for n in _NUMBER.findall(text)}
    return wanted <= present


def is_supported(sentence: str, passage_texts: Iterable[str], threshold: float = SUPPORT_THRESHOLD) -> bool:
    """Lexically supported and passing every guard."""
    return check(sentence, passage_texts, threshold) is None


def split_cited(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """Model prose → (sentence without markers, the [n] numbers it carries) per sentence."""
    result = []
    for sentence in split_sentences(text):
        numbers = tuple(dict.fromkeys(int(n) for n in _MARKER.findall(sentence)))
        clean = " ".join(_MARKER.sub("", sentence).split())
        clean = re.sub(r"\s+([.!?;,:])", r"\1", clean)
        if clean:
            result.append((clean, numbers))
    return result


def best_quote(sentence: str, passage: Passage) -> str:
    """The passage sentence that overlaps most with ``sentence``: what a citation quotes."""
    target = stems(sentence)
    candidates = split_sentences(passage.text) or [passage.text]
    return max(candidates, key=lambda s: len(stems(s) & target))


def verify_cited(sentence: str, numbers: Sequence[int], sources: dict[int, Passage]) -> list[Passage] | None:
    """The cited passages if every number is a known source and together they support the
    sentence; ``None`` if the sentence must be dropped."""
    if not numbers or any(n not in sources for n in numbers):
        return None
    cited = [sources[n] for n in numbers]
    return cited if is_supported(sentence, (p.text for p in cited)) else None
