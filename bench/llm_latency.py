"""LLM mode latency: the model answers every call in a fixed time; six collections in parallel."""

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import synthetic_collections, synthetic_passages
from bench.timeline import Timeline
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph.context import ResearchLimits
from graph.llm.openai_client import build_chat_model
from retrieval.backends.embedded import build_embedded_backend
from tests.fakes.llm_api import FakeLLM


async def measure_llm_latency(
    collections: int = 6, model_latency: float = 0.3, runs: int = 5
) -> dict[str, Any]:
    fake = await FakeLLM(latency=model_latency).start()
    model = build_chat_model(base_url=fake.url, api_key="bench", model="fake")
    rows: list[dict[str, float]] = []
    modes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = build_embedded_backend(Path(tmp))
        config = await synthetic_collections(backend, collections)
        service = ResearchService(
            config=config,
            backend=backend,
            metrics=build_metrics(),
            limits=ResearchLimits(max_fanout=collections, branch_timeout=30),
            question_timeout=60,
            llm=model,
        )
        sentence = synthetic_passages("c0", 1)[0].text.split(".")[0]
        question = service.make_question("in:" + ",".join(config.names) + " " + sentence)
        for _ in range(runs):
            timeline = Timeline()
            answer = await service.answer(question, surface="cli", on_event=timeline.record)
            total = time.perf_counter() - timeline.started
            modes.append(answer.mode)
            rows.append(
                {
                    "total": total,
                    "plan": timeline.planning,
                    "slowest_branch": timeline.slowest_branch,
                    "synthesis": timeline.synthesis,
                }
            )
        await service.close()
    await fake.stop()
    total = statistics.median(r["total"] for r in rows)
    critical = statistics.median(r["plan"] + r["slowest_branch"] + r["synthesis"] for r in rows)
    return {
        "collections": collections,
        "model_latency_seconds": model_latency,
        "runs": runs,
        "model_calls_per_question": len(fake.requests) // runs,
        "answer_modes": sorted(set(modes)),
        "median_seconds": round(total, 4),
        "median_plan_seconds": round(statistics.median(r["plan"] for r in rows), 4),
        "median_slowest_branch_seconds": round(statistics.median(r["slowest_branch"] for r in rows), 4),
        "median_synthesis_seconds": round(statistics.median(r["synthesis"] for r in rows), 4),
        "median_critical_path_seconds": round(critical, 4),
        "ratio_to_critical_path": round(total / critical, 3),
        "sequential_model_time_seconds": round(model_latency * (len(fake.requests) // runs), 2),
    }
