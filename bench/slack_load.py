"""100 concurrent mentions through the HTTP endpoint against the fake Slack Web API."""

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from bench.search import percentile
from bot.serve import build_server
from bot.settings import ConferSettings
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-signing-secret"
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


async def measure_slack_load(
    mentions: int = 100, duplicates: int = 20, rate_limited: int = 5
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        shutil.copytree(ROOT / "samples", kb / "samples")
        shutil.copy(ROOT / "collections.yaml", kb / "collections.yaml")
        config = load_collections(kb / "collections.yaml")
        backend = build_embedded_backend(kb / ".confer")
        for collection in config.collections:
            await index_collection(backend, collection, config)
        fake = await FakeSlackApi().start()
        fake.script("chat.update", status=429, retry_after=1, times=rate_limited)
        settings = ConferSettings(
            _env_file=None,
            SLACK_BOT_TOKEN="xoxb-bench",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=fake.url,
            CONFER_COLLECTIONS=str(kb / "collections.yaml"),
        )
        server = build_server(settings, backend=backend, host="127.0.0.1")
        server.port = 0
        await server.start()
        async with ClientSession() as http:
            slack = SignedSlack(
                url=f"http://127.0.0.1:{server.port}/slack/events", secret=SECRET, session=http
            )
            bodies = [
                slack.mention_body(QUESTIONS[i % len(QUESTIONS)], channel=f"C{i % 10:04d}")
                for i in range(mentions)
            ]
            latencies: list[float] = []

            async def deliver(body: str, retry: int | None = None) -> int:
                started = time.perf_counter()
                status, _ = await slack.send(body, "application/json", retry_num=retry)
                latencies.append(time.perf_counter() - started)
                return status

            started = time.perf_counter()
            statuses = await asyncio.gather(
                *(deliver(b) for b in bodies), *(deliver(b, retry=1) for b in bodies[:duplicates])
            )
            await fake.wait_for(lambda: len(fake.answers()) >= mentions, within=300)
            answered_at = time.perf_counter() - started
            status_ts = fake.status_messages()
            await fake.wait_for(
                lambda: all("Done in" in (fake.updates(ts) or [""])[-1] for ts in status_ts), within=600
            )
            finished_at = time.perf_counter() - started
        interrupted = await server.stop()
        await fake.stop()
    threads = [a["thread_ts"] for a in fake.answers()]
    limited = [c for c in fake.calls if c.status == 429]
    return {
        "mentions": mentions,
        "duplicate_deliveries": duplicates,
        "acks_200": sum(1 for s in statuses if s == 200),
        "ack_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "ack_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "ack_max_ms": round(max(latencies) * 1000, 1),
        "answered": len(set(threads)),
        "duplicate_answers": len(threads) - len(set(threads)),
        "seconds_until_all_answered": round(answered_at, 2),
        "seconds_until_all_status_final": round(finished_at, 2),
        "web_api_calls_per_question": round(len(fake.calls) / mentions, 2),
        "status_edits_per_question": round(len(fake.ok_calls("chat.update")) / mentions, 2),
        "rate_limited_429s": len(limited),
        "status_messages": len(status_ts),
        "status_messages_final": sum(1 for ts in status_ts if "Done in" in (fake.updates(ts) or [""])[-1]),
        "interrupted_on_stop": interrupted,
        "mean_ack_ms": round(statistics.mean(latencies) * 1000, 1),
    }
