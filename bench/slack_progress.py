"""What people see of progress when 100 questions arrive at once, on each Slack progress path:
``stream`` (a loading state, then one streamed reply with a plan) and ``edit`` (a status message
edited under the ``chat.update`` budget). One burst of mentions in one workspace through POST
/slack/events (sent by ``bench.loadgen`` in its own process) against the fake Web API, with
sub-agents that take different times (a slower backend per collection), so that tasks finish apart.

Per question it reports: event → first visible progress (the loading state or the stream's start;
the status message on the edit path); for every first-round sub-agent, how long after its branch
finished the chat showed its final state (its task complete or error; its status line final, or
the final summary); and the Web API calls each question made. The fake answers 429
(Retry-After: 1) to the first five calls the path makes many of (appends, or edits)."""

import asyncio
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from bench.loadgen import run_burst
from bench.search import percentile
from bench.slack_load import QUESTIONS, SECRET, indexed_samples
from bot.server import build_server, settle_heap
from bot.settings import ConferSettings
from graph.events import BranchFinished, ProgressEvent
from graph.models import Answer, Question
from retrieval.collections import CollectionsConfig
from tests.fakes.backends import FaultyBackend
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack

# Each collection's searches take this long, so a question's branches finish apart.
DELAYS = {"engineering": 0.2, "security": 0.5, "people": 0.8, "product": 1.1}
_CASE = re.compile(r"\(case (\d+)\)")
_FINAL_LINE = re.compile(r"^(✅|➖|⚠️|⏱️) (.+?): ", re.MULTILINE)


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "max": round(max(values), 3),
    }


def _watch_branches(server: Any, finished: dict[int, dict[str, float]]) -> None:
    """Record when each question's first-round branches finish (the service's own progress events);
    the question's ``(case n)`` tells which mention it is."""
    service = server.service
    original = service.answer

    async def answer(question: Question, **kwargs: Any) -> Answer:
        match = _CASE.search(question.text)
        forward = kwargs.pop("on_event", None)

        async def on_event(event: ProgressEvent) -> None:
            if match and isinstance(event, BranchFinished) and event.round == 1:
                finished.setdefault(int(match.group(1)), {})[event.collection] = time.monotonic()
            if forward is not None:
                await forward(event)

        result: Answer = await original(question, on_event=on_event, **kwargs)
        return result

    service.answer = answer


def _edit_final_at(fake: FakeSlackApi, status_ts: str, title: str) -> float | None:
    """When a status message first showed ``title``'s line as final, or its final summary."""
    for call in fake.ok_calls("chat.postMessage") + fake.ok_calls("chat.update"):
        ts = call.response.get("ts") if call.method == "chat.postMessage" else call.params.get("ts")
        if str(ts) != status_ts:
            continue
        text = str(call.params.get("text", ""))
        if "Done in" in text or any(m.group(2) == title for m in _FINAL_LINE.finditer(text)):
            return call.at
    return None


async def measure_slack_progress(progress: str, mentions: int = 100, rate_limited: int = 5) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        config, inner = await indexed_samples(kb)
        backend = FaultyBackend(inner, delays=DELAYS)
        fake = await FakeSlackApi().start()
        fake.script(
            "chat.appendStream" if progress == "stream" else "chat.update",
            status=429,
            retry_after=1,
            times=rate_limited,
        )
        settings = ConferSettings(
            _env_file=None,
            SLACK_BOT_TOKEN="xoxb-bench",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=fake.url,
            CONFER_COLLECTIONS=str(kb / "collections.yaml"),
            CONFER_SHUTDOWN_GRACE_SECONDS=5,
            CONFER_SLACK_PROGRESS=progress,
        )
        server = build_server(settings, backend=backend, host="127.0.0.1")
        server.port = 0
        await server.start()
        settle_heap()
        finished: dict[int, dict[str, float]] = {}
        _watch_branches(server, finished)
        url = f"http://127.0.0.1:{server.port}/slack/events"
        async with ClientSession() as http:
            slack = SignedSlack(url=url, secret=SECRET, session=http)
            threads = [f"1700000500.{i:06d}" for i in range(mentions)]
            bodies = [
                slack.mention_body(
                    f"{QUESTIONS[i % len(QUESTIONS)]} (case {i})", channel=f"C{i % 10:04d}", ts=threads[i]
                )
                for i in range(mentions)
            ]
            burst = await run_burst({"url": url, "secret": SECRET, "requests": [{"body": b} for b in bodies]})
            began = burst["began"]

            def answered() -> int:
                return len(fake.finished_streams()) + len(fake.answers())

            await fake.wait_for(lambda: answered() >= mentions, within=600)
            answered_after = time.monotonic() - began
            if progress == "edit":
                await fake.wait_for(
                    lambda: all("Done in" in (fake.updates(ts) or [""])[-1] for ts in fake.status_messages()),
                    within=900,
                )
        await server.stop()
        await fake.stop()
        await inner.close()
    return _report(progress, mentions, fake, config, threads, finished, began, answered_after)


def _report(
    progress: str,
    mentions: int,
    fake: FakeSlackApi,
    config: CollectionsConfig,
    threads: list[str],
    finished: dict[int, dict[str, float]],
    began: float,
    answered_after: float,
) -> dict[str, Any]:
    streams = {s.thread_ts: s for s in fake.streams.values()}
    status_of = {
        str(c.params["thread_ts"]): str(c.response["ts"])
        for c in fake.ok_calls("chat.postMessage")
        if c.params.get("thread_ts")
        and not c.params.get("blocks")
        and str(c.params.get("text", "")).startswith(("🔎", "⏳"))
    }
    first_visible: list[float] = []
    lags: list[float] = []
    missing = 0
    calls_per_method: Counter[str] = Counter()
    for i, thread in enumerate(threads):
        stream, status_ts = streams.get(thread), status_of.get(thread)
        own = {ts for ts in (stream.ts if stream else None, status_ts) if ts}
        calls = [
            c
            for c in fake.calls
            if c.params.get("thread_ts") == thread
            or (c.params.get("ts") in own and c.method != "chat.postMessage")
        ]
        calls_per_method.update(c.method for c in calls)
        visible = [
            c.at
            for c in calls
            if c.method in ("assistant.threads.setStatus", "chat.startStream")
            or (c.method == "chat.postMessage" and c.response.get("ts") == status_ts)
        ]
        if visible:
            first_visible.append(min(visible) - began)
        for collection, at in finished.get(i, {}).items():
            shown: float | None = None
            if stream is not None:
                shown = stream.final_at(f"search-{collection}")
            elif status_ts is not None:
                found = config.get(collection)
                shown = _edit_final_at(fake, status_ts, found.title if found else collection)
            if shown is None:
                missing += 1
            else:
                lags.append(max(0.0, shown - at))
    total_calls = sum(calls_per_method.values())
    return {
        "progress": progress,
        "mentions": mentions,
        "answered": len(fake.finished_streams()) + len(fake.answers()),
        "bot_messages_per_question": round(
            (len(fake.ok_calls("chat.startStream")) + len(fake.ok_calls("chat.postMessage"))) / mentions, 2
        ),
        "streams_started": len(fake.streams),
        "seconds_until_all_answered": round(answered_after, 2),
        "event_to_first_progress_seconds": _stats(first_visible),
        "branch_finished_to_final_state_seconds": _stats(lags),
        "branches_never_shown_final": missing,
        "web_api_calls_per_question": round(total_calls / mentions, 2),
        "web_api_calls_by_method": {m: round(n / mentions, 2) for m, n in sorted(calls_per_method.items())},
        "rate_limited_429s": len([c for c in fake.calls if c.status == 429]),
    }


async def measure_both(mentions: int = 100) -> dict[str, Any]:
    return {progress: await measure_slack_progress(progress, mentions) for progress in ("stream", "edit")}


if __name__ == "__main__":  # `python -m bench.slack_progress`: this benchmark alone
    print(json.dumps(asyncio.run(measure_both()), indent=2))
