"""Runs the real ``confer serve`` stack in-process against the fake Slack API."""

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import ClientSession
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.server import ConferServer, build_server
from bot.settings import load_settings
from retrieval.backends import SearchBackend
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.backends import FaultyBackend
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack

SIGNING_SECRET = "test-signing-secret-0123456789"


@dataclass
class Harness:
    server: ConferServer
    fake: FakeSlackApi
    slack: SignedSlack
    backend: FaultyBackend
    http: ClientSession

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"


async def index_samples(kb: Path) -> SearchBackend:
    config = load_collections(kb / "collections.yaml")
    backend = build_embedded_backend(kb / ".confer")
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return backend


@pytest.fixture
async def harness(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    """The post-and-edit path (``CONFER_SLACK_PROGRESS=edit``): a status message edited in place,
    then the answer as a second message. ``stream_harness`` runs the default, streamed path."""
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    async for running in _harness(sample_dir, monkeypatch):
        yield running


@pytest.fixture
async def stream_harness(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    """The default path: a loading state, then one streamed reply with a plan and the answer."""
    monkeypatch.delenv("CONFER_SLACK_PROGRESS", raising=False)
    async for running in _harness(sample_dir, monkeypatch):
        yield running


async def _harness(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    fake = await FakeSlackApi().start()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    monkeypatch.setenv("SLACK_API_URL", fake.url)
    monkeypatch.setenv("CONFER_COLLECTIONS", str(sample_dir / "collections.yaml"))
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    monkeypatch.setenv("CONFER_SHUTDOWN_GRACE_SECONDS", "5")
    backend = FaultyBackend(await index_samples(sample_dir))
    settings = load_settings(env_file=None)
    server = build_server(settings, status_interval=0.2, backend=backend, host="127.0.0.1")
    server.port = 0
    await server.start()
    http = ClientSession()
    slack = SignedSlack(
        url=f"http://127.0.0.1:{server.port}/slack/events",
        secret=SIGNING_SECRET,
        session=http,
        response_url=fake.response_url,
    )
    yield Harness(server=server, fake=fake, slack=slack, backend=backend, http=http)
    await http.close()
    if not server._stopping:
        await server.stop()
    await fake.stop()


@contextlib.asynccontextmanager
async def running_harness(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    """``_harness`` for a test that sets its own environment first; stopped even when the test fails."""
    runs = _harness(sample_dir, monkeypatch)
    harness = await anext(runs)
    try:
        yield harness
    finally:
        with contextlib.suppress(StopAsyncIteration):
            await anext(runs)


# The local Redis the Redis tests share (a database of its own), or CONFER_TEST_REDIS_URL.
REDIS_URL = os.environ.get("CONFER_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    """The test Redis's URL; the test is skipped, saying so, when no Redis answers there."""
    client = Redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except (RedisConnectionError, OSError):
        await client.aclose()
        pytest.skip(f"no Redis at {REDIS_URL}")
    await client.aclose()
    yield REDIS_URL
