"""Deduplication shared by replicas, against the local Redis (REDIS_URL or localhost:6379)."""

import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis

from bot.chat.dedupe import RedisDeduplicator, build_deduplicator
from bot.server import build_server
from bot.settings import SettingsError, load_settings
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.tcp_proxy import TcpProxy


async def test_two_replicas_sharing_redis_answer_an_event_once(redis_url: str) -> None:
    first = build_deduplicator(redis_url=redis_url, ttl=60)
    second = build_deduplicator(redis_url=redis_url, ttl=60)
    assert isinstance(first, RedisDeduplicator)
    event_id = f"Ev{uuid.uuid4().hex}"
    results = [
        await first.first_delivery(event_id),
        await second.first_delivery(event_id),
        await first.first_delivery(event_id),
    ]
    assert results == [True, False, False]
    assert await second.first_delivery(f"Ev{uuid.uuid4().hex}") is True
    client = Redis.from_url(redis_url)
    ttl = await client.ttl(f"confer:event:{event_id}")
    await client.aclose()
    assert 0 < ttl <= 60
    await first.close()
    await second.close()


async def test_an_unreachable_redis_fails_open_but_drops_this_replicas_redeliveries() -> None:
    dedupe = build_deduplicator(redis_url="redis://127.0.0.1:1/0", ttl=60)
    assert await dedupe.first_delivery("Ev1") is True
    assert await dedupe.first_delivery("Ev1") is False
    assert await dedupe.first_delivery("Ev2") is True
    await dedupe.close()


async def test_confer_serve_with_an_unreachable_redis_stops_with_one_clear_line(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = await FakeSlackApi().start()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "test-signing-secret-0123456789")
    monkeypatch.setenv("SLACK_API_URL", fake.url)
    monkeypatch.setenv("CONFER_COLLECTIONS", str(sample_dir / "collections.yaml"))
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2-password@127.0.0.1:1/0")
    server = build_server(load_settings(env_file=None), host="127.0.0.1")
    server.port = 0
    try:
        with pytest.raises(SettingsError) as error:
            await server.start()
        [problem] = error.value.problems
        assert problem.startswith("REDIS_URL: could not reach Redis at 127.0.0.1:1 (")
        assert "hunter2" not in problem
        assert fake.posts() == []
    finally:
        await server.service.close()
        await fake.stop()


async def test_a_redelivery_after_redis_went_away_is_still_dropped(redis_url: str) -> None:
    """Seen while Redis was up, redelivered while it is down: this replica still knows the id."""
    parts = urlsplit(redis_url)
    proxy = await TcpProxy(parts.port or 6379, parts.hostname or "127.0.0.1").start()
    dedupe = build_deduplicator(redis_url=f"redis://127.0.0.1:{proxy.port}{parts.path}", ttl=60)
    try:
        event_id = f"Ev{uuid.uuid4().hex}"
        assert await dedupe.first_delivery(event_id) is True  # recorded in Redis
        await proxy.cut()
        assert await dedupe.first_delivery(event_id) is False  # Slack's retry during the outage
        assert await dedupe.first_delivery(f"Ev{uuid.uuid4().hex}") is True
        await proxy.start()  # Redis is back: what was seen in the outage is still known here
        assert await dedupe.first_delivery(event_id) is False
    finally:
        await dedupe.close()
        await proxy.stop()
