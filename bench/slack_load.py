"""Bursts of mentions through the HTTP endpoint against the fake Slack Web API, sent by a load
generator in its own process (``bench.loadgen``), with a trivial aiohttp server measured the same
way in the same run as the floor: what any server on this machine needs to accept that burst.

A cold burst reaches a server that has just started (its first requests); a warm burst comes once
the cold burst's answers are posted (from another workspace, so that each burst's status edits have
their own ``chat.update`` budget). While they run, a task on the server's event loop measures how
late its 5 ms wake-ups are (the loop's longest stall) and ``gc.callbacks`` time every collection."""

import asyncio
import gc
import json
import shutil
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, web

from bench.loadgen import run_burst
from bench.search import percentile
from bot.server import build_server, settle_heap
from bot.settings import ConferSettings
from retrieval.backends.embedded import EmbeddedBackend, build_embedded_backend
from retrieval.collections import CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.server import serve_locally
from tests.fakes.slack_api import TEAM_ID, FakeSlackApi
from tests.fakes.slack_client import SignedSlack

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-signing-secret"
WARM_TEAM = "T0002"
QUESTIONS = [
    "How long is parental leave?",
    "What is the API rate limit for Enterprise accounts?",
    "Who approves production access?",
    "How long are application logs kept?",
    "What happens when a laptop is lost?",
    "How are on-call engineers paid?",
    "How do the engineering and security policies differ on production access?",
    "How are webhooks signed?",
]


@dataclass
class LoopWatch:
    """Samples of the event loop's lateness, and the duration of every garbage collection."""

    period: float = 0.005
    # (when, how late, the loop thread's CPU time over the wait): on a shared machine a timer is
    # also late while the process waits for a CPU; the loop's own stall is at most its CPU time.
    lateness: list[tuple[float, float, float]] = field(default_factory=list)
    collections: list[tuple[float, float, int]] = field(default_factory=list)  # (at, seconds, generation)
    _gc_started: float = 0.0
    _task: asyncio.Task[None] | None = None

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        now = time.monotonic()
        if phase == "start":
            self._gc_started = now
        else:
            self.collections.append((now, now - self._gc_started, int(info["generation"])))

    async def _watch(self) -> None:
        while True:
            before, cpu_before = time.monotonic(), time.thread_time()
            await asyncio.sleep(self.period)
            after, cpu = time.monotonic(), time.thread_time() - cpu_before
            late = after - before - self.period
            self.lateness.append((after, late, min(late, cpu)))

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def longest_stall_ms(self, start: float, end: float) -> float:
        return round(
            1000 * max((late for at, late, _ in self.lateness if start <= at <= end), default=0.0), 1
        )

    def longest_busy_stall_ms(self, start: float, end: float) -> float:
        """The longest stall counted in the loop thread's CPU time: the loop's own work."""
        return round(
            1000 * max((busy for at, _, busy in self.lateness if start <= at <= end), default=0.0), 1
        )

    def longest_gc_ms(self, start: float, end: float) -> float:
        return round(1000 * max((s for at, s, _ in self.collections if start <= at <= end), default=0.0), 1)

    def full_collections(self, start: float, end: float) -> int:
        return sum(1 for at, _, generation in self.collections if start <= at <= end and generation == 2)


def _acks(result: dict[str, Any]) -> dict[str, Any]:
    latencies = result["latencies"]
    return {
        "requests": len(latencies),
        "acks_200": sum(1 for s in result["statuses"] if s == 200),
        "ack_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "ack_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "ack_max_ms": round(max(latencies) * 1000, 1),
        "mean_ack_ms": round(statistics.mean(latencies) * 1000, 1),
    }


async def _floor_server() -> tuple[web.AppRunner, str]:
    """The floor: a trivial aiohttp server that answers every POST with an empty 200."""

    async def ok(_request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_post("/slack/events", ok)
    runner, port = await serve_locally(app)
    return runner, f"http://127.0.0.1:{port}/slack/events"


def _burst(slack: SignedSlack, url: str, mentions: int, duplicates: int, team: str) -> dict[str, Any]:
    bodies = [
        slack.mention_body(QUESTIONS[i % len(QUESTIONS)], channel=f"C{i % 10:04d}").replace(
            f'"{TEAM_ID}"', f'"{team}"'
        )
        for i in range(mentions)
    ]
    requests = [{"body": b} for b in bodies] + [{"body": b, "retry": 1} for b in bodies[:duplicates]]
    return {"url": url, "secret": SECRET, "requests": requests}


async def indexed_samples(kb: Path) -> tuple[CollectionsConfig, EmbeddedBackend]:
    """The sample collections copied into ``kb`` and indexed there (embedded backend)."""
    shutil.copytree(ROOT / "samples", kb / "samples")
    shutil.copy(ROOT / "collections.yaml", kb / "collections.yaml")
    config = load_collections(kb / "collections.yaml")
    backend = build_embedded_backend(kb / ".confer")
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return config, backend


async def measure_slack_load(
    mentions: int = 100, duplicates: int = 20, rate_limited: int = 5, *, wait_final: bool = True
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        _, backend = await indexed_samples(kb)
        fake = await FakeSlackApi().start()
        fake.script("chat.update", status=429, retry_after=1, times=rate_limited)
        floor_runner, floor_url = await _floor_server()
        settings = ConferSettings(
            _env_file=None,
            SLACK_BOT_TOKEN="xoxb-bench",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=fake.url,
            CONFER_COLLECTIONS=str(kb / "collections.yaml"),
            CONFER_SHUTDOWN_GRACE_SECONDS=5,
            CONFER_SLACK_PROGRESS="edit",  # acks and post-and-edit; streams: bench.slack_progress
        )
        server = build_server(settings, backend=backend, host="127.0.0.1")
        server.port = 0
        await server.start()
        settle_heap()  # as `confer serve` does once started
        auth_at_start = len(fake.ok_calls("auth.test"))
        watch = LoopWatch()
        watch.start()
        bot_url = f"http://127.0.0.1:{server.port}/slack/events"
        async with ClientSession() as http:
            slack = SignedSlack(url=bot_url, secret=SECRET, session=http)
            # The floor twice, while the bot is idle: the same burst to a server that does nothing.
            floor = await run_burst(_burst(slack, floor_url, mentions, duplicates, TEAM_ID))
            floor_again = await run_burst(_burst(slack, floor_url, mentions, duplicates, TEAM_ID))
            calls_before = len(fake.calls)
            started = time.monotonic()
            cold_spec = _burst(slack, bot_url, mentions, duplicates, TEAM_ID)
            cold = await run_burst(cold_spec)
            auth_during_cold = len(fake.ok_calls("auth.test")) - auth_at_start
            await fake.wait_for(lambda: len(fake.answers()) >= mentions, within=300)
            cold_answered = time.monotonic() - started
            cold_end = time.monotonic()
            cold_status = fake.status_messages()
            warm = await run_burst(_burst(slack, bot_url, mentions, duplicates, WARM_TEAM))
            await fake.wait_for(lambda: len(fake.answers()) >= 2 * mentions, within=300)
            warm_end = time.monotonic()
            if wait_final:  # the ~50 edits a minute budget makes this about two minutes
                await fake.wait_for(
                    lambda: all("Done in" in (fake.updates(ts) or [""])[-1] for ts in cold_status),
                    within=600,
                )
            cold_final = time.monotonic() - started
        await watch.stop()
        cold_threads = {json.loads(r["body"])["event"]["ts"] for r in cold_spec["requests"]}
        cold_messages = set(cold_status)
        cold_calls = [  # every call the cold burst's questions made, retries and 429s included
            c
            for c in fake.calls[calls_before:]
            if c.params.get("thread_ts") in cold_threads or c.params.get("ts") in cold_messages
        ]
        interrupted = await server.stop()
        await floor_runner.cleanup()
        await fake.stop()
    threads = [a["thread_ts"] for a in fake.answers()]
    limited = [c for c in fake.calls if c.status == 429]
    per_method = Counter(c.method for c in cold_calls)
    floor_p50 = statistics.median([_acks(floor)["ack_p50_ms"], _acks(floor_again)["ack_p50_ms"]])
    cold_acks, warm_acks = _acks(cold), _acks(warm)
    return {
        "mentions": mentions,
        "duplicate_deliveries": duplicates,
        "floor": {
            "first": _acks(floor),
            "second": _acks(floor_again),
            "p50_ms": floor_p50,
            "longest_loop_stall_ms": max(
                watch.longest_stall_ms(r["began"], r["ended"]) for r in (floor, floor_again)
            ),
            "longest_loop_stall_cpu_ms": max(
                watch.longest_busy_stall_ms(r["began"], r["ended"]) for r in (floor, floor_again)
            ),
        },
        "cold": {
            **cold_acks,
            "ack_p50_to_floor": round(cold_acks["ack_p50_ms"] / floor_p50, 2),
            "auth_test_calls": auth_during_cold,
            "longest_loop_stall_ms": watch.longest_stall_ms(cold["began"], cold["ended"]),
            "longest_loop_stall_cpu_ms": watch.longest_busy_stall_ms(cold["began"], cold["ended"]),
            "longest_gc_pause_ms": watch.longest_gc_ms(cold["began"], cold["ended"]),
            "longest_loop_stall_until_answered_ms": watch.longest_stall_ms(cold["began"], cold_end),
            "longest_loop_stall_until_answered_cpu_ms": watch.longest_busy_stall_ms(cold["began"], cold_end),
        },
        "warm": {
            **warm_acks,
            "ack_p50_to_floor": round(warm_acks["ack_p50_ms"] / floor_p50, 2),
            "longest_loop_stall_ms": watch.longest_stall_ms(warm["began"], warm["ended"]),
            "longest_loop_stall_cpu_ms": watch.longest_busy_stall_ms(warm["began"], warm["ended"]),
            "longest_gc_pause_ms": watch.longest_gc_ms(warm["began"], warm["ended"]),
            "longest_loop_stall_until_answered_ms": watch.longest_stall_ms(warm["began"], warm_end),
            "longest_loop_stall_until_answered_cpu_ms": watch.longest_busy_stall_ms(warm["began"], warm_end),
        },
        "full_collections_during_bursts": watch.full_collections(cold["began"], warm_end),
        "auth_test_calls_at_start": auth_at_start,
        "answered": len(set(threads)),
        "duplicate_answers": len(threads) - len(set(threads)),
        "seconds_until_all_answered": round(cold_answered, 2),
        "seconds_until_all_status_final": round(cold_final, 2),
        # The cold burst's calls until its status messages were final, per question and per method.
        "web_api_calls_per_question": round(len(cold_calls) / mentions, 2),
        "web_api_calls_by_method": {m: round(n / mentions, 2) for m, n in sorted(per_method.items())},
        "status_edits_per_question": round(per_method["chat.update"] / mentions, 2),
        "rate_limited_429s": len(limited),
        "status_messages": len(cold_status),
        "status_messages_final": sum(1 for ts in cold_status if "Done in" in (fake.updates(ts) or [""])[-1]),
        "interrupted_on_stop": interrupted,
    }


if __name__ == "__main__":  # `python -m bench.slack_load`: this benchmark alone
    print(json.dumps(asyncio.run(measure_slack_load()), indent=2))
