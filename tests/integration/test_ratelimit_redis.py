"""Rate budgets shared by replicas, against the local Redis (CONFER_TEST_REDIS_URL or localhost:6379)."""

import functools
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bot.chat.ratelimit import RedisRateBudget, Window, build_budget
from tests.fakes.slack_api import TEAM_ID
from tests.integration.conftest import _harness
from tests.integration.test_slack_stream import _streams_done


@pytest.fixture
async def replicas(redis_url: str) -> AsyncIterator[tuple[RedisRateBudget, RedisRateBudget]]:
    windows = (Window(2, 1.0),)  # bursts of 2, then 2 a second
    first = build_budget(name="test", windows=windows, redis=Redis.from_url(redis_url))
    second = build_budget(name="test", windows=windows, redis=Redis.from_url(redis_url))
    assert isinstance(first, RedisRateBudget) and isinstance(second, RedisRateBudget)
    yield first, second
    await first.close()
    await second.close()


async def test_two_replicas_spend_one_workspace_budget(
    replicas: tuple[RedisRateBudget, RedisRateBudget],
) -> None:
    first, second = replicas
    team = f"T{uuid.uuid4().hex}"
    await first.acquire(team)
    await second.acquire(team)  # the burst of 2 is spent, across both replicas
    started = time.monotonic()
    await first.acquire(team)
    assert time.monotonic() - started >= 0.4  # waited for the shared bucket to refill half a second
    quick = time.monotonic()
    await second.acquire(f"T{uuid.uuid4().hex}")  # another workspace has its own bucket
    assert time.monotonic() - quick < 0.4


async def test_a_429_seen_by_one_replica_holds_back_the_other(
    replicas: tuple[RedisRateBudget, RedisRateBudget], redis_url: str
) -> None:
    first, second = replicas
    team = f"T{uuid.uuid4().hex}"
    await first.pause(team, 1.0)
    started = time.monotonic()
    await second.acquire(team)
    assert time.monotonic() - started >= 0.9
    client = Redis.from_url(redis_url)
    ttl = await client.ttl(f"confer:budget:test:{team}")
    await client.aclose()
    assert 0 < ttl <= 62  # the bucket expires once it would be full again


async def test_redis_gone_falls_back_to_the_replicas_own_budget() -> None:
    budget = build_budget(
        name="test", windows=(Window(5, 1.0),), redis=Redis.from_url("redis://127.0.0.1:1/0")
    )
    assert isinstance(budget, RedisRateBudget)
    await budget.acquire("T1")  # Redis refuses the connection: the in-process bucket answers
    await budget.close()


async def test_confer_serve_with_redis_spends_the_shared_append_budget(
    redis_url: str, sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    # The question must be researched (its plan streamed), not answered from the answer cache that
    # this Redis keeps across runs.
    monkeypatch.setenv("CONFER_CACHE", "off")
    client = Redis.from_url(redis_url)
    key = f"confer:budget:chat.appendStream:{TEAM_ID}"
    await client.delete(key)
    async for harness in _harness(sample_dir, monkeypatch):
        assert harness.server.gateway is not None
        assert isinstance(harness.server.gateway.append_budget, RedisRateBudget)
        assert isinstance(harness.server.gateway.update_budget, RedisRateBudget)
        harness.backend.delays = {"people": 0.6}
        await harness.slack.mention(  # a new event id: Redis remembers delivered ones for an hour
            "in:people,engineering how long is parental leave?", event_id=f"Ev{uuid.uuid4().hex}"
        )
        await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
        assert harness.fake.ok_calls("chat.appendStream")
        assert float(await client.hget(key, "1") or 100) < 100  # appends were counted in Redis
    await client.delete(key)
    await client.aclose()
