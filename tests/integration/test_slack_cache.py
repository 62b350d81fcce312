"""The answer cache in Slack, through the real server and the fake Slack API: the same question
asked again is answered from the cache with a note saying when it was researched and a "Research
again" button; a 👎 on the cached answer evicts it; "again" in the thread researches anew."""

from typing import Any

from bot import messages
from tests.integration.conftest import Harness
from tests.integration.test_slack_feedback import _answer_ts, _ask, _feedback_click

QUESTION = "How long is parental leave? in:people"


def _note(answer: dict[str, Any]) -> bool:
    return "Cached answer, from " in answer["text"]


def _again_button(answer: dict[str, Any]) -> dict[str, Any]:
    [block] = [b for b in answer["blocks"] if b.get("block_id", "").startswith("trace:")]
    [button] = [e for e in block["elements"] if e["text"]["text"] == messages.RESEARCH_AGAIN_LABEL]
    return {**button, "block_id": block["block_id"]}


def _lookups(harness: Harness, outcome: str) -> float:
    registry = harness.server.metrics.registry
    return registry.get_sample_value("confer_answer_cache_total", {"outcome": outcome}) or 0.0


async def test_a_repeated_question_is_answered_from_the_cache_until_a_thumbs_down_evicts_it(
    harness: Harness,
) -> None:
    first = await _ask(harness, QUESTION, thread="1700000001.000100")
    assert not _note(first) and "20 weeks" in first["text"]
    cached = await _ask(harness, "how long is parental leave  in:people", thread="1700000002.000100")
    assert _note(cached) and "20 weeks" in cached["text"]
    assert _lookups(harness, "hit") == 1.0
    assert _again_button(cached)["value"] == "How long is parental leave?"
    await harness.slack.act(
        _feedback_click(cached, "negative"),
        thread_ts="1700000002.000100",
        message_ts=_answer_ts(harness, cached),
    )
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("views.open")))
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_answer_cache_evictions_total", {"reason": "vote"}) == 1.0
    researched = await _ask(harness, QUESTION, thread="1700000003.000100")
    assert not _note(researched) and "20 weeks" in researched["text"]


async def test_research_again_and_again_in_the_thread_research_anew(harness: Harness) -> None:
    thread = "1700000004.000100"
    await _ask(harness, QUESTION, thread="1700000005.000100")
    cached = await _ask(harness, QUESTION, thread=thread)
    assert _note(cached)
    before = len(harness.fake.answers())
    await harness.slack.act(_again_button(cached), thread_ts=thread, message_ts=_answer_ts(harness, cached))
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == before + 1)
    anew = harness.fake.answers()[-1]
    assert anew["thread_ts"] == thread and not _note(anew) and "20 weeks" in anew["text"]
    # Asked once more, it is cached again (the fresh answer replaced the entry); "again" refreshes it.
    assert _note(await _ask(harness, QUESTION, thread="1700000006.000100"))
    before = len(harness.fake.answers())
    await harness.slack.message("again", thread_ts="1700000006.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == before + 1)
    latest = harness.fake.answers()[-1]
    assert latest["thread_ts"] == "1700000006.000100" and not _note(latest) and "20 weeks" in latest["text"]
