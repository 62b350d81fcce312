"""Embeddings: the local model's rate at index time, a question's embedding alone and under load,
the index's size per passage, and embedded search with embeddings on (hybrid) and off (BM25 only).

The search sweep's passages are the Zipf corpus of ``bench.corpus`` with random unit vectors written
directly (embedding 500k passages with the model would take hours); the search is the real one,
``EmbeddedBackend.search``, with an embedder whose ``embed_query`` returns a vector computed before
the timing: the question's own embedding is measured apart. The rate and the latencies use the real
local model, as Confer builds it (``bot.wiring.build_embedder``: ``LocalEmbedder()``), on English
passages of the datasets' typical lengths cut from the sample documents' words, and on the sample
passages themselves.
"""

import asyncio
import contextlib
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import sample_passages, synthetic_passages, synthetic_queries
from bench.multilingual import markdown as multilingual_markdown
from bench.multilingual import measure_multilingual
from bench.search import percentile
from retrieval.backends.embedded import EmbeddedBackend, build_embedded_backend
from retrieval.collections import Collection
from retrieval.embeddings import LocalEmbedder, ProgressCallback, VectorCache, Vectors, passage_text
from retrieval.passages import Passage

DIMENSIONS = 384  # all-MiniLM-L6-v2's
SEARCH_SIZES = (5_000, 100_000, 500_000)
# Typical passage lengths, in words with the title (medians): orgdocs 310, hotpotqa500 81 (means
# 298 and 91); the samples' chunks are about 80.
LENGTHS = {"orgdocs-like (~260 words)": 260, "hotpotqa-like (~90 words)": 90}
# Questions as people ask them, numbered so that each is new to the query cache.
QUESTIONS = (
    "who do I wake up if the site dies at 3am",
    "I left my yubikey in a taxi, what now",
    "how many vacation days do I get a year",
    "can I expense a new monitor for working from home",
    "what is the rate limit of the Beacon API",
    "how do I roll back a bad deploy",
    "how long do we keep customer shipment data",
    "who approves production database access",
)


def _question(i: int) -> str:
    return f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"


class RandomEmbedder:
    """Random unit vectors under a bench model name: ``embed_passages`` draws them, ``embed_query``
    returns the vector ``prepare`` drew for the text before the timing (a random one otherwise)."""

    model = "bench:random-unit"
    dimensions = DIMENSIONS

    def __init__(self, seed: int = 5) -> None:
        self._rng = np.random.default_rng(seed)
        self._queries: dict[str, Vectors] = {}

    def _draw(self, count: int) -> Vectors:
        vectors = self._rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    def prepare(self, texts: Sequence[str]) -> None:
        self._queries.update(zip(texts, self._draw(len(texts)), strict=True))

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        return self._draw(len(texts))

    async def embed_query(self, text: str) -> Vectors:
        found = self._queries.get(text)
        return found if found is not None else self._draw(1)[0]

    async def close(self) -> None:
        pass


def english_passages(count: int, words: int, *, seed: int = 3) -> list[str]:
    """``count`` texts of ``words`` words (a title line, then the text), cut at random places from
    the sample passages' words: English that tokenizes as real documents do."""
    samples = sample_passages()
    pool = " ".join(p.text for p in samples).split()
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        start = rng.randrange(len(pool) - words)
        title = rng.choice(samples).title
        out.append(passage_text(title, " ".join(pool[start : start + words - len(title.split())])))
    return out


async def measure_throughput(embedder: LocalEmbedder, counts: dict[str, int]) -> list[dict[str, Any]]:
    """Passages a second of ``embed_passages`` (the index's path), wall and per CPU-second."""
    tokenizer = embedder._loaded().tokenizer
    sets = [("samples (all, as chunked)", [passage_text(p.title, p.text) for p in sample_passages()])]
    sets += [(name, english_passages(counts[name], words)) for name, words in LENGTHS.items()]
    rows = []
    for name, texts in sets:
        words = statistics.median(len(t.split()) for t in texts)
        tokens = statistics.median(min(256, len(tokenizer.encode(t).ids)) for t in texts)
        wall, cpu = time.perf_counter(), time.process_time()
        await embedder.embed_passages(texts)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rows.append(
            {
                "passages": name,
                "count": len(texts),
                "words_p50": words,
                "tokens_p50": tokens,
                "seconds": round(wall, 2),
                "passages_per_second": round(len(texts) / wall, 1),
                "passages_per_cpu_second": round(len(texts) / cpu, 1),
                "cores_used": round(cpu / wall, 2),
            }
        )
    return rows


def _latency(measured: tuple[list[float], list[float]]) -> dict[str, float]:
    values, cpu = measured
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 0.5) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
        "cpu_p50_ms": round(percentile(cpu, 0.5) * 1000, 1) if cpu else 0.0,
    }


async def _embed_questions(
    embedder: LocalEmbedder, first: int, count: int
) -> tuple[list[float], list[float]]:
    """Each question's embedding time as ``embed_query``'s caller sees it, and the CPU time of its
    forward pass on the embedder's thread (the rest is waiting: for a CPU, the GIL or a queue)."""
    latencies: list[float] = []
    cpu: list[float] = []
    encode = embedder._encode

    def timed(texts: Sequence[str]) -> Vectors:
        started = time.thread_time()
        try:
            return encode(texts)
        finally:
            if len(texts) == 1:  # a question's, not an index batch's running beside it
                cpu.append(time.thread_time() - started)

    embedder._encode = timed  # type: ignore[method-assign]
    try:
        for i in range(first, first + count):
            started = time.perf_counter()
            await embedder.embed_query(_question(i))
            latencies.append(time.perf_counter() - started)
    finally:
        del embedder._encode
    return latencies, cpu


async def measure_query_latency(embedder: LocalEmbedder, questions: int) -> dict[str, Any]:
    """A question's embedding alone, and while the same embedder embeds passages at index time."""
    await _embed_questions(embedder, 10_000, 3)  # first calls pay one-off work
    alone = await _embed_questions(embedder, 0, questions)
    batch = english_passages(400, 260, seed=9)
    indexing = asyncio.create_task(embedder.embed_passages(batch))
    await asyncio.sleep(0.2)  # the batch is under way
    during = await _embed_questions(embedder, questions, questions)
    unfinished = not indexing.done()
    indexing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await indexing
    return {
        "alone": _latency(alone),
        "during_index_batch": _latency(during),
        "index_batch_still_running": unfinished,
    }


def _file_bytes(path: Path) -> int:
    """The index's bytes once its write-ahead log is folded into the file."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def _index_bytes(passages: Sequence[Passage], *, embeddings: bool) -> tuple[int, int]:
    """Bytes of the index file and of the vector cache for ``passages``, with or without vectors."""
    collection = Collection(name="sized", title="Sized", sources=("x",))
    with tempfile.TemporaryDirectory() as tmp:
        cache = VectorCache(Path(tmp) / "embeddings.sqlite3") if embeddings else None
        backend = build_embedded_backend(
            Path(tmp) / "data", embedder=RandomEmbedder() if embeddings else None, vector_cache=cache
        )
        await backend.sync_collection(collection, passages)
        path = backend.path
        await backend.close()
        index = _file_bytes(path)
        return index, (_file_bytes(Path(tmp) / "embeddings.sqlite3") if embeddings else 0)


async def measure_index_size(count: int) -> list[dict[str, Any]]:
    """Bytes per passage of the SQLite index with and without embeddings (vector values do not
    change the size: random ones are written)."""
    sets: list[tuple[str, list[Passage]]] = [("synthetic (60 words)", synthetic_passages("sized", count))]
    for name, words in LENGTHS.items():
        texts = english_passages(count, words, seed=21)
        sets.append(
            (
                name,
                [
                    Passage(id=f"p{i}", collection="sized", doc_id=f"d{i // 5}", source="s", title="", text=t)
                    for i, t in enumerate(texts)
                ],
            )
        )
    rows = []
    for name, passages in sets:
        without, _ = await _index_bytes(passages, embeddings=False)
        with_vectors, cache = await _index_bytes(passages, embeddings=True)
        rows.append(
            {
                "passages": name,
                "count": len(passages),
                "bytes_per_passage_without": round(without / len(passages)),
                "bytes_per_passage_with": round(with_vectors / len(passages)),
                "vector_cache_bytes_per_passage": round(cache / len(passages)),
            }
        )
    return rows


async def _timed_searches(
    backend: EmbeddedBackend, collection: Collection, queries: Sequence[str], top_k: int
) -> tuple[list[float], float]:
    latencies = []
    cpu = time.process_time()
    for query in queries:
        started = time.perf_counter()
        await backend.search(collection, query, limit=top_k)
        latencies.append(time.perf_counter() - started)
    return latencies, (time.process_time() - cpu) / len(queries)


async def _eight_at_once(
    backend: EmbeddedBackend, collection: Collection, queries: Sequence[str], top_k: int, fanout: int = 8
) -> list[float]:
    rounds = []
    for start in range(0, len(queries) - fanout + 1, fanout):
        started = time.perf_counter()
        await asyncio.gather(
            *(backend.search(collection, q, limit=top_k) for q in queries[start : start + fanout])
        )
        rounds.append(time.perf_counter() - started)
    return rounds


async def measure_hybrid_search(
    size: int, queries: int, *, top_k: int = 8, local: LocalEmbedder | None = None
) -> dict[str, Any]:
    """Search latency at ``size`` passages with embeddings on and off, over one index file. With
    ``local``, also a question's embedding while eight hybrid searches run at a time."""
    collection = Collection(name="synthetic", title="Synthetic", sources=("x",))
    with tempfile.TemporaryDirectory() as tmp:
        writer = build_embedded_backend(Path(tmp), embedder=RandomEmbedder())
        passages = synthetic_passages("synthetic", size)
        started = time.perf_counter()
        await writer.sync_collection(collection, passages)
        index_seconds = time.perf_counter() - started
        del passages
        await writer.close()
        index_bytes = _file_bytes(writer.path)
        meaning = RandomEmbedder(seed=11)
        hybrid = build_embedded_backend(Path(tmp), embedder=meaning)
        words = build_embedded_backend(Path(tmp))
        batch = synthetic_queries(queries)
        fanout_batch = synthetic_queries(queries, seed=13)
        meaning.prepare([*batch, *fanout_batch, "first"])
        started = time.perf_counter()
        await hybrid.search(collection, "first", limit=top_k)  # reads the collection's vectors
        first_ms = (time.perf_counter() - started) * 1000
        await words.search(collection, "first", limit=top_k)
        # Alternating halves: the machine's speed drifts, so each mode meets the same moments.
        measured: dict[str, list[float]] = {"hybrid": [], "bm25": []}
        cpu: dict[str, list[float]] = {"hybrid": [], "bm25": []}
        half = len(batch) // 2
        for part in (batch[:half], batch[half:]):
            for mode, backend in (("hybrid", hybrid), ("bm25", words)):
                latencies, cpu_each = await _timed_searches(backend, collection, part, top_k)
                measured[mode] += latencies
                cpu[mode].append(cpu_each)
        fanout = {
            "hybrid": await _eight_at_once(hybrid, collection, fanout_batch, top_k),
            "bm25": await _eight_at_once(words, collection, fanout_batch, top_k),
        }
        under_load = None
        if local is not None:
            under_load = await _questions_while_searching(local, hybrid, collection, fanout_batch, top_k)
        await hybrid.close()
        await words.close()
    result: dict[str, Any] = {
        "passages": size,
        "queries": len(batch),
        "index_seconds": round(index_seconds, 1),
        "index_bytes_per_passage": round(index_bytes / size),
        "first_hybrid_search_ms": round(first_ms, 1),
    }
    for mode in ("hybrid", "bm25"):
        result[mode] = {
            "p50_ms": round(percentile(measured[mode], 0.5) * 1000, 2),
            "p95_ms": round(percentile(measured[mode], 0.95) * 1000, 2),
            "mean_ms": round(statistics.mean(measured[mode]) * 1000, 2),
            "cpu_ms_per_search": round(statistics.mean(cpu[mode]) * 1000, 2),
            "eight_at_once_p50_ms": round(percentile(fanout[mode], 0.5) * 1000, 2),
            "eight_at_once_p95_ms": round(percentile(fanout[mode], 0.95) * 1000, 2),
        }
    result["hybrid_p95_to_bm25_p95"] = round(result["hybrid"]["p95_ms"] / result["bm25"]["p95_ms"], 2)
    if under_load is not None:
        result["question_embedding_while_8_search"] = under_load
    return result


async def _questions_while_searching(
    local: LocalEmbedder,
    backend: EmbeddedBackend,
    collection: Collection,
    queries: Sequence[str],
    top_k: int,
    questions: int = 20,
) -> dict[str, Any]:
    """A question's embedding while eight branches keep searching the collection (hybrid), and
    those searches' own latency (they give way to the question for a CPU)."""
    stop = asyncio.Event()
    searches: list[float] = []

    async def branch(offset: int) -> None:
        i = offset
        while not stop.is_set():
            started = time.perf_counter()
            await backend.search(collection, queries[i % len(queries)], limit=top_k)
            searches.append(time.perf_counter() - started)
            i += 8

    branches = [asyncio.create_task(branch(n)) for n in range(8)]
    await asyncio.sleep(0.2)
    try:
        measured = await _embed_questions(local, 20_000, questions)
    finally:
        stop.set()
        await asyncio.gather(*branches)
    return {
        **_latency(measured),
        "searches_meanwhile": len(searches),
        "search_p50_ms": round(percentile(searches, 0.5) * 1000, 1),
        "search_p95_ms": round(percentile(searches, 0.95) * 1000, 1),
    }


async def measure_embeddings(
    sizes: Sequence[int], queries: int, *, passages: int = 48, questions: int = 30
) -> dict[str, Any]:
    """Every embeddings figure of ``make bench``; ``sizes`` for the search sweep."""
    local = LocalEmbedder()  # as ``bot.wiring.build_embedder`` builds it
    started = time.perf_counter()
    local.warm()
    report: dict[str, Any] = {
        "blas_threads_default": _blas_threads(),
        "cpus": os.cpu_count(),
        "model_load_seconds": round(time.perf_counter() - started, 2),
    }
    counts = {name: passages if words < 200 else max(8, passages // 2) for name, words in LENGTHS.items()}
    print("embeddings: index-time rate …", flush=True)
    report["throughput"] = await measure_throughput(local, counts)
    print("embeddings: a question's embedding, alone and during an index batch …", flush=True)
    report["query"] = await measure_query_latency(local, questions)
    print("embeddings: index size per passage …", flush=True)
    report["index_size"] = await measure_index_size(2000)
    report["search"] = []
    # A question's embedding while 8 branches search: at the largest size up to 100k.
    loaded = max((s for s in sizes if s <= 100_000), default=None)
    for size in sizes:
        print(f"embeddings: hybrid and BM25 search at {size:,} passages …", flush=True)
        with_load = local if size == loaded else None
        report["search"].append(await measure_hybrid_search(size, queries, local=with_load))
    print("embeddings: German and Spanish questions over the English samples …", flush=True)
    report["multilingual"] = await measure_multilingual({"off (BM25 only)": None, "local": local})
    await local.close()
    return report


def _latency_row(name: str, figures: dict[str, Any]) -> str:
    return (
        f"| {name} | {figures['p50_ms']} | {figures['p95_ms']} | {figures['max_ms']} "
        f"| {figures['cpu_p50_ms']} |"
    )


def _blas_threads() -> int | None:
    from threadpoolctl import threadpool_info

    found = [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
    return found[0] if found else None


def markdown(report: dict[str, Any] | None) -> list[str]:
    """The report's section on embeddings (nothing without the measurement)."""
    if not report:
        return []
    throughput = report["throughput"]
    query = report["query"]
    lines = [
        "## Embeddings (local all-MiniLM-L6-v2; search with embeddings on and off)",
        "",
        f"Model loaded in {report['model_load_seconds']} s; BLAS threads by default "
        f"{report['blas_threads_default']} on {report['cpus']} CPUs.",
        "",
        "| passages (`embed_passages`, as `confer index`) | count | words p50 | word pieces p50 "
        "| passages/s | passages per CPU-second | cores used |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['passages']} | {r['count']} | {r['words_p50']} | {r['tokens_p50']} "
            f"| {r['passages_per_second']} | {r['passages_per_cpu_second']} | {r['cores_used']} |"
            for r in throughput
        ),
        "",
        "| a question's embedding (ms) | p50 | p95 | max | CPU of its forward pass, p50 |",
        "|---|---:|---:|---:|---:|",
        _latency_row("alone", query["alone"]),
        _latency_row("while the same embedder embeds a batch of passages", query["during_index_batch"]),
        *(
            _latency_row(
                f"while 8 branches search {row['passages']:,} passages (hybrid)",
                row["question_embedding_while_8_search"],
            )
            for row in report["search"]
            if "question_embedding_while_8_search" in row
        ),
        "",
        *(
            f"Meanwhile the 8 branches searched {row['passages']:,} passages "
            f"{row['question_embedding_while_8_search']['searches_meanwhile']} times, "
            f"p50 {row['question_embedding_while_8_search']['search_p50_ms']} ms, "
            f"p95 {row['question_embedding_while_8_search']['search_p95_ms']} ms each."
            for row in report["search"]
            if "question_embedding_while_8_search" in row
        ),
        "",
        "Target: a question's embedding ≤ 50 ms under load. The CPU column is the forward pass's "
        "own CPU time on the embedder's thread: the rest of the time is waiting (for a CPU, the GIL "
        "or a queue). Index batches and the backend's pool searches run at a lower priority "
        "(`BACKGROUND_NICENESS`) than the question's thread.",
        "",
        "| index (2,000 passages) | bytes per passage, BM25 only | with embeddings | vector cache "
        "(`embeddings.sqlite3`) |",
        "|---|---:|---:|---:|",
        *(
            f"| {r['passages']} | {r['bytes_per_passage_without']:,} | {r['bytes_per_passage_with']:,} "
            f"| {r['vector_cache_bytes_per_passage']:,} |"
            for r in report["index_size"]
        ),
        "",
        "| passages | index build (s) | bytes a passage | first hybrid search (ms) | hybrid p50 / p95 (ms) "
        "| BM25 p50 / p95 (ms) | hybrid ÷ BM25 p95 | CPU a search, hybrid / BM25 (ms) "
        "| 8 at once p50 / p95, hybrid / BM25 (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['passages']:,} | {r['index_seconds']} | {r['index_bytes_per_passage']:,} "
            f"| {r['first_hybrid_search_ms']} | {r['hybrid']['p50_ms']} / {r['hybrid']['p95_ms']} "
            f"| {r['bm25']['p50_ms']} / {r['bm25']['p95_ms']} | {r['hybrid_p95_to_bm25_p95']} "
            f"| {r['hybrid']['cpu_ms_per_search']} / {r['bm25']['cpu_ms_per_search']} "
            f"| {r['hybrid']['eight_at_once_p50_ms']} / {r['hybrid']['eight_at_once_p95_ms']}, "
            f"{r['bm25']['eight_at_once_p50_ms']} / {r['bm25']['eight_at_once_p95_ms']} |"
            for r in report["search"]
        ),
        "",
        "Search: `EmbeddedBackend.search`, top 8, over one index file of synthetic Zipf passages of 60 "
        "words with random unit vectors (384 dimensions) written directly; the question's vector is "
        "computed before the timing (its embedding is the table above). Hybrid and BM25 searches "
        "alternate by halves of the queries. Target: hybrid p95 at 100k passages ≤ 60 ms.",
        "",
        *multilingual_markdown(report.get("multilingual")),
    ]
    return lines


def main() -> None:
    """``python -m bench.embeddings``: this section alone, printed and written as JSON."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.embeddings")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SEARCH_SIZES)), help="search corpus sizes, comma-separated"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "embeddings.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    report = asyncio.run(measure_embeddings(sizes, args.queries))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print("\n".join(markdown(report)))


if __name__ == "__main__":
    main()
