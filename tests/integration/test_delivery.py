"""Delivery that never loses an answer: the two defects the fault matrix was built after, each as a
person meets it (a stream that keeps answering 429; a direct message whose answer's post lost its
connection after Slack applied it)."""

import asyncio
from pathlib import Path

import pytest

from bot import messages
from tests.integration.conftest import Harness, running_harness

DM = "D0DM"


async def questions_done(harness: Harness, within: float = 15.0) -> None:
    """Wait until every question the server has taken has ended (answered, failed, remembered)."""
    tasks = set(harness.server.scheduler._tasks)
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=within)
        assert not pending, "a question was still running"


def _answers_seen(harness: Harness, needle: str) -> int:
    """Answers a person sees anywhere: finished streams showing it, posted answers carrying it."""
    streamed = [s for s in harness.fake.finished_streams() if needle in s.text]
    posted = [a for a in harness.fake.answers() if needle in a.get("text", "")]
    return len(streamed) + len(posted)


async def test_a_stream_that_answers_429_to_every_append_still_delivers_the_answer_once(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``chat.appendStream`` answers 429: the plan cannot move, yet the answer appears once
    (posted under the stopped stream) within the question's time-out, and nothing stays streaming."""
    monkeypatch.setenv("CONFER_QUESTION_TIMEOUT_SECONDS", "5")
    async with running_harness(sample_dir, monkeypatch) as harness:
        harness.fake.script("chat.appendStream", status=429, retry_after=0.05, always=True)
        # Research ends within the plan's coalescing interval of its first post, so the answer is
        # handed over while the status writer waits out that interval.
        await harness.slack.mention("in:people how long is parental leave?", ts="1700000500.000001")
        await harness.fake.wait_for(lambda: _answers_seen(harness, "20 weeks") > 0, within=8)
        await harness.server.scheduler.drain(5)
        assert _answers_seen(harness, "20 weeks") == 1
        assert harness.fake.streams and all(s.stopped for s in harness.fake.streams.values())
        said = [p["text"] for p in harness.fake.posts()] + [e["text"] for e in harness.fake.ephemerals()]
        assert not any(text in (messages.UNEXPECTED, messages.NOT_POSTED) for text in said)


def _final_status(harness: Harness) -> str | None:
    """The DM status message's last text once it says the question ended, else ``None``."""
    for ts in harness.fake.status_messages():
        texts = harness.fake.updates(ts)
        if texts and texts[-1].startswith(("✅", "⚠️")):
            return texts[-1]
    return None


def _answer_post(params: dict[str, object]) -> bool:
    return bool(params.get("blocks"))


async def test_a_direct_message_answer_whose_connection_dropped_after_posting_is_found_and_remembered(
    stream_harness: Harness,
) -> None:
    """Slack applied the DM answer's post and the connection broke before its reply came back:
    Confer finds it in the conversation's history (a DM answer has no thread), so the status says
    done, nothing is posted twice, and a follow-up is answered from the remembered turn."""
    harness = stream_harness
    harness.fake.script("chat.postMessage", drop="after", when=_answer_post)
    await harness.slack.message("How long is parental leave?", channel=DM, channel_type="im")
    await harness.fake.wait_for(lambda: bool(harness.fake.status_messages()))
    await questions_done(harness)
    shown = harness.fake.history[DM]
    assert [m["ts"] for m in shown] == sorted(m["ts"] for m in shown)  # the status above the answer
    answers = [m for m in shown if m.get("blocks")]
    assert len(answers) == 1 and "20 weeks" in answers[0]["text"]
    assert len(shown) == 2  # the status and the answer, nothing else
    final = _final_status(harness)
    assert final is not None and "Done in" in final and final != messages.STATUS_POST_FAILED
    assert harness.fake.ephemerals() == []
    # The turn was remembered: a follow-up in the same DM is read with it.
    await harness.slack.message("And can it be taken in blocks?", channel=DM, channel_type="im")
    await harness.fake.wait_for(lambda: len([m for m in harness.fake.history[DM] if m.get("blocks")]) == 2)
    follow_up = [m for m in harness.fake.history[DM] if m.get("blocks")][-1]
    assert "three blocks" in follow_up["text"]
