"""The stores' fault matrix: PostgreSQL (thread memory, answer records) and Redis (deduplication,
the shared rate budgets) go away before, during or after a question, behind a TCP proxy the test
cuts, and come back. 6 cells (2 stores × 3 moments), each asserting what the asker sees: the
question answered once, a follow-up in its thread answered (from the thread itself when memory
cannot be read), and, once the store is back, a question answered once again with the store in
use (its turn remembered; a redelivered event answered once)."""

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.chat.memory import ThreadKey
from tests.fakes.slack_api import TEAM_ID
from tests.fakes.tcp_proxy import TcpProxy
from tests.integration.conftest import REDIS_URL, Harness, running_harness
from tests.integration.test_slack_conversations import POSTGRES_URL, _postgres_answers

MOMENTS = ("before", "during", "after")


async def _send(harness: Harness, body: str, **extra: Any) -> str:
    """Send an event with an id of its own (Redis remembers event ids across tests); returns the
    body sent, to send again as Slack redelivers it."""
    event = json.loads(body)
    event["event_id"] = f"Ev{uuid.uuid4().hex[:16]}"
    sent = json.dumps(event)
    await harness.slack.send(sent, "application/json", **extra)
    return sent


def _answers_in(harness: Harness, thread: str) -> list[dict[str, Any]]:
    return [a for a in harness.fake.answers() if a.get("thread_ts") == thread]


async def _proxy(store: str) -> tuple[TcpProxy, str, str]:
    """A proxy in front of the store, and the setting that points Confer at it (the test is
    skipped, saying so, when the store does not answer)."""
    if store == "postgresql":
        if not _postgres_answers():
            pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: its outages are not tested")
        proxy = await TcpProxy(5432).start()
        return proxy, "DATABASE_URL", f"postgresql://postgres@127.0.0.1:{proxy.port}/test"
    client = Redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except (RedisConnectionError, OSError):
        pytest.skip(f"no Redis at {REDIS_URL}: its outages are not tested")
    finally:
        await client.aclose()
    parts = urlsplit(REDIS_URL)
    proxy = await TcpProxy(parts.port or 6379, parts.hostname or "127.0.0.1").start()
    return proxy, "REDIS_URL", f"redis://127.0.0.1:{proxy.port}{parts.path}"


@pytest.mark.parametrize("when", MOMENTS)
@pytest.mark.parametrize("store", ["postgresql", "redis"])
async def test_a_store_down_loses_no_answer_and_is_used_again_when_it_returns(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, store: str, when: str
) -> None:
    proxy, setting, url = await _proxy(store)
    monkeypatch.setenv(setting, url)
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    # Each cell's question is researched: an answer the shared Redis cached in an earlier cell or run
    # would skip the research this matrix cuts the store during (the answer cache's own Redis outage
    # is tested in test_answer_cache.py).
    monkeypatch.setenv("CONFER_CACHE", "memory")
    base = f"17{uuid.uuid4().int % 10**8:08d}"  # PostgreSQL and Redis outlive the test: new threads
    thread, later = f"{base}.000100", f"{base}.000900"
    try:
        async with running_harness(sample_dir, monkeypatch) as harness:
            harness.backend.delays = {"people": 0.5}
            if when == "before":
                await proxy.cut()
            await _send(
                harness, harness.slack.mention_body("How long is parental leave? in:people", ts=thread)
            )
            if when == "during":  # research has begun (its status is up) when the store goes
                await harness.fake.wait_for(lambda: bool(harness.fake.status_messages()))
                await proxy.cut()
            await harness.fake.wait_for(lambda: len(_answers_in(harness, thread)) == 1)
            if when == "after":
                await proxy.cut()
            # A follow-up while the store is down: answered, understood from the thread.
            follow_up = harness.slack.message_body(
                "And can it be taken in blocks?", ts=f"{base}.000200", thread_ts=thread
            )
            await _send(harness, follow_up)
            await harness.fake.wait_for(lambda: len(_answers_in(harness, thread)) == 2)
            assert "three blocks" in _answers_in(harness, thread)[1]["text"]

            await proxy.start()  # the store is back
            body = await _send(
                harness, harness.slack.mention_body("How long is parental leave? in:people", ts=later)
            )
            await harness.fake.wait_for(lambda: len(_answers_in(harness, later)) == 1)
            if store == "postgresql":  # the turn is remembered in PostgreSQL again
                memory = harness.server.memory
                assert memory is not None
                key = ThreadKey("slack", TEAM_ID, "C0001", later)
                await harness.server.scheduler.drain(5)
                assert [t for t in await memory.turns(key) if t.answer]
            else:  # deduplication is shared through Redis again: its event id is there, and a
                # redelivery is answered once
                client = Redis.from_url(REDIS_URL)
                try:
                    assert await client.exists("confer:event:" + json.loads(body)["event_id"])
                finally:
                    await client.aclose()
                await harness.slack.send(body, "application/json", retry_num=1)
                await harness.server.scheduler.drain(5)
                assert len(_answers_in(harness, later)) == 1
            assert [len(_answers_in(harness, t)) for t in (thread, later)] == [2, 1]  # none twice
    finally:
        await proxy.stop()


def test_the_store_matrix_has_six_cells() -> None:
    print(f"\nstore outage matrix: 2 stores × {len(MOMENTS)} moments = {2 * len(MOMENTS)} cells")
    assert len(MOMENTS) == 3
