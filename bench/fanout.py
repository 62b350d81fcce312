"""Fan-out efficiency: N collections whose searches take a fixed time, parallel and sequential."""

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import synthetic_collections, synthetic_passages
from bench.graph_floor import floor_graph, floor_run_cpu, measure_graph_floor
from bench.timeline import Timeline
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from bot.server import settle_heap
from graph.context import ResearchLimits
from retrieval import language, text
from retrieval.backends.embedded import build_embedded_backend
from tests.fakes.backends import FaultyBackend

# Parallel questions are asked in this many rounds of ``runs``, each round after the text caches are
# emptied and the heap settled again: every round meets new traffic the same way, and the CPU median
# over three times the questions swings less on a shared machine than one round's.
CPU_ROUNDS = 3


async def measure_fanout(collections: int, latency: float, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        inner = build_embedded_backend(Path(tmp))
        config = await synthetic_collections(inner, collections)
        backend = FaultyBackend(inner, default_delay=latency)
        service = ResearchService(
            config=config,
            backend=backend,
            metrics=build_metrics(),
            limits=ResearchLimits(max_fanout=collections, branch_timeout=30),
            question_timeout=60,
        )
        # Every run asks a new question (the first sentence of another passage), so the text work
        # cached per passage is measured as new traffic meets it, not as a repeat of one question.
        first_sentences = [
            p.text.split(".")[0] for p in synthetic_passages("c0", (CPU_ROUNDS + 1) * runs + 1)
        ]
        questions = iter(
            service.make_question("in:" + ",".join(config.names) + " " + s) for s in first_sentences
        )
        await service.answer(next(questions), surface="cli")  # the first question pays one-off imports
        results: dict[str, list[dict[str, float]]] = {"parallel": [], "sequential": []}
        # The machine's speed swings by a third within minutes: each round of parallel questions is
        # followed by as many runs of LangGraph's do-nothing graph of the same shape, its branches
        # waiting as long as the searches, so each question's CPU can be read against a floor
        # measured moments later (their ratio moves far less between runs than either figure). The
        # floor runs come after the round, not between its questions, whose CPU they would disturb
        # (their garbage left to the next question's collections); the next round settles the heap.
        floor = floor_graph()
        await floor_run_cpu(floor, collections, latency)  # the first run pays one-off work
        floors: list[float] = []
        for mode, rounds in (("parallel", CPU_ROUNDS), ("sequential", 1)):
            for run in range(rounds * runs):
                if run % runs == 0:
                    # Earlier questions in this process (this measurement's and the smaller fan-outs')
                    # asked of the first collections: their passages' text work must not be served
                    # from the caches they left behind.
                    text.forget_texts()
                    language.forget_texts()
                    settle_heap()  # as `confer serve` does once started: set-up leaves the collector
                question = next(questions)
                timeline = Timeline()
                started = time.perf_counter()
                cpu_started = time.process_time()
                await service.answer(
                    question, surface="cli", on_event=timeline.record, sequential=mode == "sequential"
                )
                total = time.perf_counter() - started
                cpu = time.process_time() - cpu_started
                results[mode].append(
                    {
                        "total": total,
                        "slowest_branch": timeline.slowest_branch,
                        "synthesis": timeline.synthesis,
                        "cpu": cpu,
                    }
                )
                if mode == "parallel" and run % runs == runs - 1:
                    floors += [await floor_run_cpu(floor, collections, latency) for _ in range(runs)]
        await backend.close()
    summary: dict[str, Any] = {"collections": collections, "branch_latency_seconds": latency, "runs": runs}
    for mode, rows in results.items():
        total = statistics.median(r["total"] for r in rows)
        critical = statistics.median(r["slowest_branch"] + r["synthesis"] for r in rows)
        summary[mode] = {
            "median_seconds": round(total, 4),
            "median_critical_path_seconds": round(critical, 4),
            "ratio_to_critical_path": round(total / critical, 3),
        }
    summary["speedup"] = round(
        summary["sequential"]["median_seconds"] / summary["parallel"]["median_seconds"], 2
    )
    # CPU time of the whole process while a question runs: the work outside the waits.
    summary["cpu_ms_per_question"] = round(1000 * statistics.median(r["cpu"] for r in results["parallel"]), 2)
    summary["cpu_questions"] = len(results["parallel"])
    # Each question against the floor run in the same place after its round: the CPU that is
    # Confer's own work (search, drafting, synthesis, the service) rather than LangGraph's
    # scheduling, and the question's CPU as a multiple of LangGraph's.
    pairs = [(r["cpu"], beside) for r, beside in zip(results["parallel"], floors, strict=True)]
    summary["floor_beside_cpu_ms"] = round(1000 * statistics.median(f for _, f in pairs), 2)
    summary["cpu_to_floor_ratio"] = round(statistics.median(c / f for c, f in pairs), 2)
    summary["cpu_above_floor_ms"] = round(1000 * statistics.median(c - f for c, f in pairs), 2)
    summary["langgraph_floor_cpu_ms"] = await measure_graph_floor(collections, max(runs, 5))
    summary["langgraph_floor_waiting_cpu_ms"] = await measure_graph_floor(
        collections, max(runs, 5), wait=latency
    )
    return summary
