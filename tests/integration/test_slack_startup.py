"""``confer serve`` start-up against the fake Slack Web API: the bot's identity asked once, one
pooled connection set for every call, and a rejected or unreachable Slack stopping the start."""

import asyncio
import os
import socket
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.fakes.slack_api import FakeSlackApi
from tests.integration.conftest import Harness


async def test_a_cold_burst_asks_auth_test_once_and_reuses_connections(harness: Harness) -> None:
    questions = 30
    replies = await asyncio.gather(
        *(
            harness.slack.mention(
                "How long is parental leave?", ts=f"1700000100.{n:06d}", channel=f"C{n % 5}"
            )
            for n in range(questions)
        )
    )
    assert [status for status, _ in replies] == [200] * questions
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == questions, within=120)
    assert len(harness.fake.ok_calls("auth.test")) == 1  # at start-up, before the first request
    calls = [c for c in harness.fake.calls if c.method != "auth.test"]
    assert len(calls) >= 2 * questions
    # Kept-alive connections: at most one per call made at the same instant (the burst's status
    # posts), reused for the later edits and answers, never one per call.
    assert len(harness.fake.peers) <= questions + 1 < len(calls)


def _free_port() -> int:
    with socket.socket() as probe:  # bound, then released: nobody listens on it
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _serve(env_extra: dict[str, str], sample_dir: Path) -> tuple[int, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PORT": str(_free_port()),
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "a-real-looking-secret",
        "CONFER_COLLECTIONS": str(sample_dir / "collections.yaml"),
        "CONFER_DATA_DIR": str(sample_dir / ".confer"),
        **env_extra,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        env=env,
        cwd=sample_dir,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_a_rejected_token_stops_the_start_with_one_line(sample_dir: Path) -> None:
    fake = await FakeSlackApi().start()
    fake.script("auth.test", error="invalid_auth")
    try:
        code, err = await _serve({"SLACK_API_URL": fake.url}, sample_dir)
    finally:
        await fake.stop()
    assert code == 2
    lines = err.splitlines()
    assert lines[-1] == "confer: Invalid configuration: SLACK_BOT_TOKEN: Slack rejected it (invalid_auth)"
    assert "Traceback" not in err and len(lines) <= 2  # at most the call's own warning before it
    assert [c.method for c in fake.calls] == ["auth.test"]


async def test_an_unreachable_slack_stops_the_start_with_one_line(sample_dir: Path) -> None:
    code, err = await _serve({"SLACK_API_URL": f"http://127.0.0.1:{_free_port()}/api"}, sample_dir)
    assert code == 2
    lines = err.splitlines()
    assert lines[-1].startswith(
        "confer: Invalid configuration: SLACK_API_URL: could not reach the Slack Web API"
    )
    assert "Traceback" not in err and len(lines) <= 3
