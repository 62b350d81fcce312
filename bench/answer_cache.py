"""The answer cache against research, in one run on the sample collections: the service time of a
cache hit beside the same questions researched (extractive, embedded index, embeddings on), p50 over
the samples; and, with a model configured (the fake OpenAI-compatible server), how many model calls
a hit makes. ``python -m bench.answer_cache`` runs it alone."""

import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bot.chat.cache import MemoryAnswerCache
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph import Question, build_chat_model
from graph.context import ResearchLimits
from retrieval.backends import SearchBackend
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.llm_api import FakeLLM

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = (
    "How long is parental leave?",
    "How do the engineering and security policies differ on production access?",
    "What is the rate limit for Growth accounts?",
    "Who approves production access?",
    "How many days of paid time off do I get?",
    "What should I do if I lose my security key?",
)
ROUNDS = 5  # each question researched and hit this many times


def _p50(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


async def indexed_samples(kb: Path) -> tuple[CollectionsConfig, SearchBackend]:
    """The sample collections copied into ``kb`` and indexed there (embedded index, embeddings on)."""
    shutil.copytree(ROOT / "samples", kb / "samples")
    shutil.copy(ROOT / "collections.yaml", kb / "collections.yaml")
    config = load_collections(kb / "collections.yaml")
    backend = build_embedded_backend(kb / ".confer")
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return config, backend


async def measure_answer_cache(rounds: int = ROUNDS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config, backend = await indexed_samples(Path(tmp))
        allowed = tuple(c.name for c in config.collections)
        service = ResearchService(
            config=config,
            backend=backend,
            metrics=build_metrics(),
            limits=ResearchLimits(),
            question_timeout=60,
            cache=MemoryAnswerCache(ttl=3600),
        )
        await service.answer(Question(text="warm up the embedder", allowed=allowed), surface="cli")
        researched: list[float] = []
        hits: list[float] = []
        questions = [Question(text=text, allowed=allowed) for text in QUESTIONS]
        for _ in range(rounds):  # researched (and kept), then the same questions from the cache
            for question in questions:
                started = time.perf_counter()
                await service.answer(question, surface="cli", fresh=True)
                researched.append(time.perf_counter() - started)
        for _ in range(rounds):
            for question in questions:
                started = time.perf_counter()
                answer = await service.answer(question, surface="cli")
                hits.append(time.perf_counter() - started)
                assert answer.cached_at > 0
        llm = await FakeLLM().start()
        model = build_chat_model(base_url=llm.url, api_key="sk-bench", model="fake-model")
        try:
            with_model = ResearchService(
                config=config,
                backend=backend,
                metrics=build_metrics(),
                limits=ResearchLimits(),
                question_timeout=60,
                llm=model,
                model="fake-model",
                cache=MemoryAnswerCache(ttl=3600),
            )
            calls_researched, calls_hit = [], []
            for text in QUESTIONS:
                question = Question(text=text, allowed=allowed)
                before = len(llm.requests)
                await with_model.answer(question, surface="cli")
                calls_researched.append(len(llm.requests) - before)
                before = len(llm.requests)
                await with_model.answer(question, surface="cli")
                calls_hit.append(len(llm.requests) - before)
        finally:
            await model.close()
            await llm.stop()
        await backend.close()
    return {
        "questions": len(QUESTIONS),
        "samples": len(hits),
        "researched_p50_ms": _p50(researched),
        "hit_p50_ms": _p50(hits),
        "hit_max_ms": round(max(hits) * 1000, 3),
        "hit_share_of_researched": round(statistics.median(hits) / statistics.median(researched), 4),
        "model_calls_researched": calls_researched,
        "model_calls_hit": calls_hit,
    }


def markdown(result: dict[str, Any]) -> list[str]:
    return [
        "## Answer cache: a repeated question beside the same question researched",
        "",
        f"{result['questions']} sample questions, each researched {result['samples'] // result['questions']} "
        "times (extractive, `fresh`), then each answered as often from the in-process cache, in one run "
        f"({result['samples']} samples each; the service's `answer`, from call to return):",
        "",
        "| researched p50 (ms) | cache hit p50 (ms) | hit ÷ researched | slowest hit (ms) |",
        "|---:|---:|---:|---:|",
        f"| {result['researched_p50_ms']} | {result['hit_p50_ms']} | {result['hit_share_of_researched']} "
        f"| {result['hit_max_ms']} |",
        "",
        f"With a model configured, model calls per question researched: {result['model_calls_researched']}; "
        f"per cache hit: {result['model_calls_hit']}.",
        "",
    ]


if __name__ == "__main__":
    measured = asyncio.run(measure_answer_cache())
    print(json.dumps(measured, indent=2))
    print("\n".join(markdown(measured)))
