"""Scores that mean the same in every collection, and the hybrid of words and meaning.

A search engine ranks a collection with that collection's own statistics: a word rare in the
corpus but common in one collection weighs little there, and a merge of such scores is not a
ranking of the corpus. Measured on orgdocs (7 collections): the fan-out's merged BM25 results
reached R@5 61.3 against 73.3 for one index over the same passages; with each collection's hits
scored with the corpus's statistics instead, 73.3, and with the hybrid below 78.1 (one hybrid
index: 78.0).

- ``bm25``: FTS5's bm25 formula (k1 1.2, b 0.75, weighted column frequencies, idf clamped to 1e-6
  for a phrase in half the rows or more) over the texts of a search's candidates, with the idf and
  average length of the whole corpus (``CorpusStats``) instead of one collection's.
- ``fuse``: the hybrid score, a convex combination (weight ``LEXICAL_WEIGHT``) of the word score
  and the cosine, each min-max normalised over the passages ranked together. Chosen over
  reciprocal rank fusion on two datasets at once (one index: orgdocs R@5 78.0 vs 76.6; hotpotqa500
  in README), with the weight 0.5 fixed in advance, not tuned.

Tokens follow FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer: runs of letters and
digits, lower-cased, diacritics removed, each stemmed with the Porter stemmer (tokens of 3 to 64
characters; FTS5 leaves others as they are).
"""

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from retrieval.passages import Passage
from retrieval.text import fold

LEXICAL_WEIGHT = 0.5
K1 = 1.2
B = 0.75
CLAMPED_IDF = 1e-6

_TOKEN_RE = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1)
def _porter() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


@lru_cache(maxsize=1 << 16)
def _stem(token: str) -> str:
    if not 3 <= len(token) <= 64:
        return token
    stemmed: str = _porter().stemWord(token)
    return stemmed


@lru_cache(maxsize=4096)
def fts_tokens(text: str) -> tuple[str, ...]:
    """The tokens FTS5's porter tokenizer makes of ``text`` (as near as Python gets)."""
    return tuple(_stem(t) for t in _TOKEN_RE.findall(fold(text)))


@dataclass(frozen=True)
class QueryPhrase:
    """One quoted phrase of an FTS5 MATCH expression (``"word"`` or ``"stem"*``), tokenized."""

    text: str  # as it stands in the expression, quotes and star included
    tokens: tuple[str, ...]
    prefix: bool


def query_phrases(match: str) -> list[QueryPhrase]:
    """The phrases of ``retrieval.backends.embedded.fts_query``'s OR-ed form."""
    phrases = []
    for part in match.split(" OR "):
        prefix = part.endswith("*")
        body = part.rstrip("*").strip('"').replace('""', '"')
        tokens = tuple(t for t in _TOKEN_RE.findall(fold(body)))
        if prefix:
            tokens = tuple(_stem(t) for t in tokens[:-1]) + tokens[-1:]
        else:
            tokens = tuple(_stem(t) for t in tokens)
        if tokens:
            phrases.append(QueryPhrase(text=part, tokens=tokens, prefix=prefix))
    return phrases


@dataclass(frozen=True)
class CorpusStats:
    """What bm25's idf and length normalisation read, over every collection searched together."""

    rows: int
    tokens: int  # all columns' tokens together
    hits: Mapping[str, int]  # rows holding each phrase (by ``QueryPhrase.text``)

    @property
    def average_length(self) -> float:
        return self.tokens / self.rows if self.rows else 1.0

    def idf(self, phrase: str) -> float:
        n = self.hits.get(phrase, 0)
        value = math.log((self.rows - n + 0.5) / (n + 0.5)) if self.rows else 0.0
        return value if value > 0 else CLAMPED_IDF


def combine_stats(parts: Iterable[CorpusStats]) -> CorpusStats:
    rows = tokens = 0
    hits: Counter[str] = Counter()
    for part in parts:
        rows += part.rows
        tokens += part.tokens
        hits.update(part.hits)
    return CorpusStats(rows=rows, tokens=tokens, hits=dict(hits))


def _count(phrase: QueryPhrase, tokens: Sequence[str]) -> int:
    size = len(phrase.tokens)
    first = phrase.tokens[0]
    if size == 1:
        if phrase.prefix:
            return sum(1 for t in tokens if t.startswith(first))
        return tokens.count(first)
    found = 0
    last = size - 1
    for i in range(len(tokens) - last):
        if tokens[i] != first and not (phrase.prefix and last == 0):
            continue
        window = tokens[i : i + size]
        head_ok = tuple(window[:last]) == phrase.tokens[:last]
        tail = window[last]
        if head_ok and (
            tail.startswith(phrase.tokens[last]) if phrase.prefix else tail == phrase.tokens[last]
        ):
            found += 1
    return found


def bm25(
    phrases: Sequence[QueryPhrase], stats: CorpusStats, title: str, text: str, *, title_weight: float
) -> float:
    """FTS5's bm25 of one row (title and text columns) under ``stats``; positive, higher is better."""
    title_tokens, text_tokens = fts_tokens(title), fts_tokens(text)
    length = len(title_tokens) + len(text_tokens)
    norm = K1 * (1 - B + B * length / stats.average_length)
    score = 0.0
    for phrase in phrases:
        frequency = title_weight * _count(phrase, title_tokens) + _count(phrase, text_tokens)
        if frequency:
            score += stats.idf(phrase.text) * frequency * (K1 + 1) / (frequency + norm)
    return score


def _min_max(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high <= low:
        return [1.0 if high > 0 else 0.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def fuse(passages: Sequence[Passage], *, weight: float = LEXICAL_WEIGHT) -> list[Passage]:
    """``passages`` (each with ``lexical`` and ``semantic`` set) scored by the hybrid and sorted,
    best first. A passage without one of the two scores has the lowest of that kind."""
    if not passages:
        return []
    lexical = _min_max([p.lexical or 0.0 for p in passages])
    semantic_raw = [p.semantic for p in passages]
    floor = min((s for s in semantic_raw if s is not None), default=0.0)
    semantic = _min_max([floor if s is None else s for s in semantic_raw])
    scored = [
        p.model_copy(update={"score": weight * lex + (1 - weight) * sem})
        for p, lex, sem in zip(passages, lexical, semantic, strict=True)
    ]
    scored.sort(key=lambda p: (-p.score, p.id))
    return scored


def is_hybrid(passages: Iterable[Passage]) -> bool:
    """Whether these passages come from searches by words and meaning (their scores are fused)."""
    return any(p.semantic is not None for p in passages)


def best_by_collection(pool: Sequence[Passage]) -> dict[str, float]:
    """Each collection's best hybrid score with its passages fused together with every other
    collection's: a routing probe's answer, on one scale for all of them."""
    best: dict[str, float] = {}
    for passage in fuse(pool):
        best.setdefault(passage.collection, passage.score)
    return best
