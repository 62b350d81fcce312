"""Embedded search latency against corpus size."""

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import synthetic_passages, synthetic_queries
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import Collection


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def measure_search(size: int, queries: int, top_k: int = 8, fanout: int = 8) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        backend = build_embedded_backend(Path(tmp))
        collection = Collection(name="synthetic", title="Synthetic", sources=("x",))
        passages = synthetic_passages("synthetic", size)
        started = time.perf_counter()
        await backend.sync_collection(collection, passages)
        index_seconds = time.perf_counter() - started
        latencies: list[float] = []
        hits = 0
        cpu_started = time.process_time()
        for query in synthetic_queries(queries):
            t0 = time.perf_counter()
            found = await backend.search(collection, query, limit=top_k)
            latencies.append(time.perf_counter() - t0)
            hits += bool(found)
        cpu_per_search = (time.process_time() - cpu_started) / queries
        # A question's branches: ``fanout`` searches of the collection at once, as many rounds as the
        # queries allow (new queries: the same ones would be served from SQLite's warm pages alike).
        rounds: list[float] = []
        round_cpu: list[float] = []
        batch = synthetic_queries(queries, seed=13)
        for start in range(0, len(batch) - fanout + 1, fanout):
            t0 = time.perf_counter()
            c0 = time.process_time()
            await asyncio.gather(
                *(backend.search(collection, q, limit=top_k) for q in batch[start : start + fanout])
            )
            rounds.append(time.perf_counter() - t0)
            round_cpu.append(time.process_time() - c0)
        # Concurrency: 4 readers at once, as when several sub-agents search the same file.
        t0 = time.perf_counter()
        await asyncio.gather(
            *(backend.search(collection, q, limit=top_k) for q in synthetic_queries(queries))
        )
        concurrent_throughput = queries / (time.perf_counter() - t0)
        await backend.close()
    return {
        "passages": size,
        "queries": queries,
        "index_seconds": round(index_seconds, 2),
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 2),
        "mean_ms": round(statistics.mean(latencies) * 1000, 2),
        "cpu_ms_per_search": round(cpu_per_search * 1000, 2),
        "fanout": fanout,
        "fanout_p50_ms": round(percentile(rounds, 0.5) * 1000, 2),
        "fanout_p95_ms": round(percentile(rounds, 0.95) * 1000, 2),
        "fanout_cpu_ms": round(statistics.median(round_cpu) * 1000, 2),
        "queries_with_hits": hits,
        "concurrent_queries_per_second": round(concurrent_throughput, 1),
    }
