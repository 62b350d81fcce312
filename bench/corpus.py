"""Synthetic passages for benchmarks: Zipf-distributed words over one fixed vocabulary."""

import itertools
import random
from functools import cache
from pathlib import Path

from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig, load_collections, resolve_sources
from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.ingest.pipeline import source_name
from retrieval.passages import Passage

VOCABULARY_SIZE = 20_000
ROOT = Path(__file__).resolve().parent.parent


@cache
def vocabulary() -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Words and their cumulative Zipf weights; the same for every caller."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    ordered = tuple(sorted(words))
    cumulative = tuple(itertools.accumulate(1 / (rank + 1) for rank in range(len(ordered))))
    return ordered, cumulative


def synthetic_passages(
    collection: str, count: int, *, seed: int = 7, words_per_passage: int = 60
) -> list[Passage]:
    rng = random.Random(seed)
    vocab, cumulative = vocabulary()
    passages = []
    for i in range(count):
        words = rng.choices(vocab, cum_weights=cumulative, k=words_per_passage)
        sentences = [" ".join(words[j : j + 12]).capitalize() + "." for j in range(0, len(words), 12)]
        passages.append(
            Passage(
                id=f"{collection}-{i}",
                collection=collection,
                doc_id=f"{collection}-doc-{i // 5}",
                source=f"synthetic/{collection}/{i // 5}.md",
                title=" ".join(rng.choices(vocab, cum_weights=cumulative, k=4)).title(),
                text=" ".join(sentences),
            )
        )
    return passages


def synthetic_queries(count: int, *, seed: int = 11) -> list[str]:
    """2–5 mid-frequency words: not stopword-like, not unseen."""
    rng = random.Random(seed)
    pool = vocabulary()[0][50:5000]
    return [" ".join(rng.sample(pool, rng.randint(2, 5))) for _ in range(count)]


async def synthetic_collections(
    backend: SearchBackend, count: int, *, passages: int = 200
) -> CollectionsConfig:
    """``count`` collections named c0, c1, … of synthetic passages, indexed into ``backend``."""
    config = CollectionsConfig(
        collections=tuple(
            Collection(name=f"c{i}", title=f"Collection {i}", sources=("x",)) for i in range(count)
        )
    )
    for index, collection in enumerate(config.collections):
        # A seed of its own per collection: collections with the same texts would let one branch's
        # text work serve every other branch (c0 keeps seed 7, which the benchmarks' questions use).
        await backend.sync_collection(
            collection, synthetic_passages(collection.name, passages, seed=7 + index)
        )
    return config


def sample_passages() -> list[Passage]:
    """The sample collections' passages, loaded and chunked as ``confer index`` does."""
    config = load_collections(ROOT / "collections.yaml")
    passages: list[Passage] = []
    for collection in config.collections:
        for path in resolve_sources(collection, config):
            for document in load_file(path, source=source_name(path, config.base_dir)):
                passages += chunk_document(document, collection=collection.name)
    return passages
