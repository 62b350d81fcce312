"""Citation checks shared by every answer mode: a cited passage must have been retrieved in this
run and must lexically support the sentence that cites it."""

from collections.abc import Iterable

from retrieval.text import stems

SUPPORT_THRESHOLD = 0.5


def support(sentence: str, passage_texts: Iterable[str]) -> float:
    """Share of the sentence's content stems found in the cited passages (1.0 for a quote)."""
    sentence_stems = stems(sentence)
    if not sentence_stems:
        return 0.0
    found: set[str] = set()
    for text in passage_texts:
        found |= stems(text)
    return len(sentence_stems & found) / len(sentence_stems)


def is_supported(sentence: str, passage_texts: Iterable[str], threshold: float = SUPPORT_THRESHOLD) -> bool:
    return support(sentence, passage_texts) >= threshold
