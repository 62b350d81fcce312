"""LLM mode at a hosted model's speed (issue 30): the fake OpenAI-compatible model answers every
call after 0.6 s to its first token and then writes 60 tokens a second (streaming), copying passage
sentences as a faithful model would. On the sample collections and questions it reports, per
question, against its floor (the question's slowest single model call, timed by the model's own
server, plus the same question's extractive time, measured just before):

- the answer's time, and the first answer text visible, in the terminal (the ``ProgressView``
  printing verified sentences) and in Slack's stream (the first ``chat.appendStream`` carrying
  answer text, through the real Bolt app and the fake Web API, from the mention's delivery);
- model calls and tokens per question;
- a stalling model (accepts and never answers): time to a found, cited answer;
- a model answering 429 (Retry-After: 2) to everything: time to an answer and refused requests
  per question after the first.
"""

import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import ClientSession
from rich.console import Console

from bench.search import percentile
from bench.slack_load import QUESTIONS, SECRET, indexed_samples
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from bot.server import build_server
from bot.settings import ConferSettings
from bot.terminal.surface import ProgressView
from graph.context import ResearchLimits
from graph.events import ProgressEvent, SentenceVerified
from graph.llm.openai_client import OpenAIChatModel, build_chat_model
from retrieval.backends import SearchBackend
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import CollectionsConfig
from tests.fakes.llm_api import Call, FakeLLM, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack

FIRST_TOKEN = 0.6
TOKENS_PER_SECOND = 60.0
STAGES = ("plan", "draft", "reflect", "synthesis", "judge")


def _ratios(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 0.5), 3), "p95": round(percentile(values, 0.95), 3)}


def _service(
    config: CollectionsConfig, backend: SearchBackend, model: OpenAIChatModel | None
) -> ResearchService:
    return ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=60,
        llm=model,
    )


def _calls_summary(calls: list[Call]) -> dict[str, Any]:
    return {
        "calls": len(calls),
        "by_stage": {
            s: sum(1 for c in calls if c.stage == s) for s in STAGES if any(c.stage == s for c in calls)
        },
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "slowest_call_seconds": round(max((c.ended - c.started for c in calls), default=0.0), 3),
    }


async def _terminal_rows(
    config: CollectionsConfig, backend: SearchBackend, fake: FakeLLM, rounds: int
) -> list[dict[str, Any]]:
    model = build_chat_model(base_url=fake.url, api_key="bench", model="hosted-fake")
    extractive, llm = _service(config, backend, None), _service(config, backend, model)
    rows: list[dict[str, Any]] = []
    try:
        for round_ in range(rounds + 1):  # the first round warms caches and connections: not kept
            for question_text in QUESTIONS:
                question = extractive.make_question(question_text)
                started = time.perf_counter()
                await extractive.answer(question, surface="cli")
                extractive_seconds = time.perf_counter() - started
                first = len(fake.calls)
                view = ProgressView(Console(file=io.StringIO(), width=200), config)
                shown: list[float] = []
                started = time.perf_counter()

                async def on_event(
                    event: ProgressEvent,
                    view: ProgressView = view,
                    shown: list[float] = shown,
                    started: float = started,
                ) -> None:
                    await view.handle(event)
                    if isinstance(event, SentenceVerified) and not shown:
                        shown.append(time.perf_counter() - started)  # printed: visible

                answer = await llm.answer(question, surface="cli", on_event=on_event)
                seconds = time.perf_counter() - started
                calls = _calls_summary(fake.calls[first:])
                floor = calls["slowest_call_seconds"] + extractive_seconds
                if round_ == 0:
                    continue
                rows.append(
                    {
                        "question": question_text,
                        "mode": answer.mode,
                        "seconds": round(seconds, 3),
                        "extractive_seconds": round(extractive_seconds, 4),
                        "floor_seconds": round(floor, 3),
                        "answer_to_floor": round(seconds / floor, 3),
                        "first_text_seconds": round(shown[0], 3) if shown else None,
                        "first_text_to_floor": round(shown[0] / floor, 3) if shown else None,
                        **calls,
                    }
                )
    finally:
        await model.close()
    return rows


async def _slack_rows(kb: Path, fake: FakeLLM, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each question asked once more by a Slack mention (streamed path): first answer text in the
    stream and the stream's end, from the delivery; the floor is the terminal run's for the question."""
    slack_api = await FakeSlackApi().start()
    settings = ConferSettings(
        _env_file=None,
        SLACK_BOT_TOKEN="xoxb-bench",
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_api.url,
        CONFER_COLLECTIONS=str(kb / "collections.yaml"),
        CONFER_SHUTDOWN_GRACE_SECONDS=5,
        CONFER_SLACK_PROGRESS="stream",
        LLM_BASE_URL=fake.url,
        LLM_MODEL="hosted-fake",
        LLM_API_KEY="bench",
    )
    server = build_server(settings, backend=build_embedded_backend(kb / ".confer"), host="127.0.0.1")
    server.port = 0
    await server.start()
    floors = {r["question"]: r["floor_seconds"] for r in rows}
    out: list[dict[str, Any]] = []
    try:
        async with ClientSession() as http:
            slack = SignedSlack(
                url=f"http://127.0.0.1:{server.port}/slack/events", secret=SECRET, session=http
            )
            for n, question in enumerate(QUESTIONS):
                ts = f"1700000900.{n:06d}"
                sent = time.monotonic()
                await slack.mention(question, ts=ts)
                await slack_api.wait_for(_stream_done(slack_api, ts), within=60)
                stream = next(s for s in slack_api.finished_streams() if s.thread_ts == ts)
                appends = [
                    c
                    for c in slack_api.ok_calls("chat.appendStream")
                    if c.params.get("ts") == stream.ts
                    and any(chunk.get("type") == "markdown_text" for chunk in c.params.get("chunks", []))
                ]
                stops = [c for c in slack_api.ok_calls("chat.stopStream") if c.params.get("ts") == stream.ts]
                first_text = (appends[0].at if appends else stops[0].at) - sent
                floor = floors[question]
                out.append(
                    {
                        "question": question,
                        "first_text_seconds": round(first_text, 3),
                        "first_text_to_floor": round(first_text / floor, 3),
                        "answer_seconds": round(stops[0].at - sent, 3),
                        "answer_to_floor": round((stops[0].at - sent) / floor, 3),
                        "text_before_stop": bool(appends),
                    }
                )
    finally:
        await server.stop()
        await slack_api.stop()
    return out


def _stream_done(slack_api: FakeSlackApi, ts: str) -> Callable[[], bool]:
    return lambda: any(s.thread_ts == ts for s in slack_api.finished_streams())


async def _failing_model(
    config: CollectionsConfig, backend: SearchBackend, reply: Reply, questions: int
) -> dict[str, Any]:
    """Questions against a model that fails every call the same way, asked one after another."""
    fake = await FakeLLM(first_token=FIRST_TOKEN, tokens_per_second=TOKENS_PER_SECOND).start()
    for stage in STAGES:
        fake.script(stage, reply, times=1000)
    model = build_chat_model(base_url=fake.url, api_key="bench", model="hosted-fake")
    service = _service(config, backend, model)
    rows: list[dict[str, Any]] = []
    try:
        for question_text in QUESTIONS[:questions]:
            first = len(fake.calls)
            started = time.perf_counter()
            answer = await service.answer(service.make_question(question_text), surface="cli")
            calls = fake.calls[first:]
            rows.append(
                {
                    "question": question_text,
                    "seconds": round(time.perf_counter() - started, 3),
                    "found": answer.found,
                    "cited": bool(answer.citations),
                    "mode": answer.mode,
                    "requests": len(calls),
                    "refused": sum(1 for c in calls if c.status == 429),
                }
            )
    finally:
        await model.close()
        await fake.stop()
    return {
        "questions": rows,
        "max_seconds": max(float(r["seconds"]) for r in rows),
        "all_found_and_cited": all(r["found"] and r["cited"] for r in rows),
        "max_refused_after_first": max((int(r["refused"]) for r in rows[1:]), default=0),
    }


async def measure_llm_mode(rounds: int = 2) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        config, backend = await indexed_samples(kb)
        fake = await FakeLLM(first_token=FIRST_TOKEN, tokens_per_second=TOKENS_PER_SECOND).start()
        try:
            rows = await _terminal_rows(config, backend, fake, rounds)
            slack = await _slack_rows(kb, fake, rows)  # the server closes its own backend
        finally:
            await fake.stop()
        stalling = await _failing_model(config, backend, Reply(delay=120.0), 3)
        limited = await _failing_model(config, backend, Reply(status=429, retry_after=2), 4)
        await backend.close()
    return {
        "model": {"first_token_seconds": FIRST_TOKEN, "tokens_per_second": TOKENS_PER_SECOND},
        "questions": len(rows),
        "answer_modes": sorted({r["mode"] for r in rows}),
        "answer_to_floor": _ratios([r["answer_to_floor"] for r in rows]),
        "terminal_first_text_to_floor": _ratios(
            [r["first_text_to_floor"] for r in rows if r["first_text_to_floor"]]
        ),
        "slack_first_text_to_floor": _ratios([r["first_text_to_floor"] for r in slack]),
        "slack_answer_to_floor": _ratios([r["answer_to_floor"] for r in slack]),
        "floor_p50_seconds": round(statistics.median(r["floor_seconds"] for r in rows), 3),
        "answer_p50_seconds": round(statistics.median(r["seconds"] for r in rows), 3),
        "model_calls_per_question": round(statistics.mean(r["calls"] for r in rows), 2),
        "prompt_tokens_per_question": round(statistics.mean(r["prompt_tokens"] for r in rows)),
        "completion_tokens_per_question": round(statistics.mean(r["completion_tokens"] for r in rows)),
        "rows": rows,
        "slack": slack,
        "stalling": stalling,
        "rate_limited": limited,
    }


if __name__ == "__main__":
    import asyncio
    import json

    print(json.dumps(asyncio.run(measure_llm_mode(1)), indent=1))
