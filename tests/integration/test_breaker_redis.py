"""The model breaker shared by replicas, against the local Redis (REDIS_URL or localhost:6379)."""

import uuid

import pytest
from redis.asyncio import Redis

from bot.chat.breaker import RedisBreaker
from graph.llm.openai_client import build_chat_model
from graph.llm.port import LLMError, QuestionModel
from graph.llm.schemas import PlanOutput
from tests.fakes.llm_api import FakeLLM, Reply


def _replica(redis_url: str, prefix: str) -> RedisBreaker:
    return RedisBreaker(Redis.from_url(redis_url), prefix=prefix, probe_seconds=5)


async def test_a_trip_on_one_replica_closes_the_model_to_the_others_until_one_probes(redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex}:"
    first, second, third = (_replica(redis_url, prefix) for _ in range(3))
    try:
        assert await second.allows()
        assert await first.trip(seconds=0.2, reason="rate_limited")  # newly open: logged once
        assert not await first.trip(seconds=0.2, reason="rate_limited")  # already open
        assert not await second.allows() and not await third.allows()
        client = Redis.from_url(redis_url)
        await client.delete(prefix + "confer:llm:breaker:open")  # Retry-After has passed
        await client.aclose()
        probes = [await second.allows(), await third.allows(), await first.allows()]
        assert probes.count(True) == 1  # one replica asks; the others wait for its answer
        await second.reset()
        assert await third.allows() and await first.allows()
    finally:
        for breaker in (first, second, third):
            await breaker.close()


async def test_a_replica_sends_nothing_to_a_model_another_replica_found_rate_limited(redis_url: str) -> None:
    fake = await FakeLLM().start()
    fake.script("plan", Reply(status=429, retry_after=30), times=10)
    prefix = f"test-{uuid.uuid4().hex}:"
    replicas = [
        build_chat_model(base_url=fake.url, api_key="k", model="m", breaker=_replica(redis_url, prefix))
        for _ in range(2)
    ]
    try:
        for replica in replicas:
            with pytest.raises(LLMError) as refused:
                await QuestionModel(replica, deadline=None).complete_json(
                    system="You plan research.", user="Question: x", schema=PlanOutput, time_budget=5
                )
            assert refused.value.reason in ("rate_limited", "breaker_open")
        assert len(fake.requests) == 1  # the second replica never asked
    finally:
        for replica in replicas:
            await replica.close()
        await fake.stop()
