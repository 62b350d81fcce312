""" "How I found this" in Slack, through the real server and the fake Slack API: the button under an
answer shows its trace to the person who asked, and only to them (chat.postEphemeral); anyone else
who clicks it is told privately that only the asker can open it. The trace names each collection
searched with its query and hits, each model call and each sentence dropped with why;
a place that may not search a collection never sees its passages; ``confer trace`` prints the
stored trace and ``confer feedback`` links a vote to it."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.chat import trace_messages
from tests.fakes.llm_api import FakeLLM
from tests.integration.conftest import Harness, running_harness
from tests.integration.test_slack_feedback import THREAD, _answer_ts, _ask, _confer, _feedback_click

ASKER, OTHER_USER = "U0USER", "U0OTHER"  # the fake's mentions come from U0USER


def _trace_button(answer: dict[str, Any]) -> dict[str, Any]:
    """The clicked element as Slack sends it: the "How I found this" button of the answer."""
    [block] = [b for b in answer["blocks"] if b["type"] == "actions" and b["block_id"].startswith("trace:")]
    [button] = block["elements"]
    assert button["text"]["text"] == trace_messages.TRACE_LABEL
    return {
        "type": "button",
        "action_id": button["action_id"],
        "block_id": block["block_id"],
        "value": button["value"],
        "text": button["text"],
    }


def _shown(ephemeral: dict[str, Any]) -> str:
    return "\n".join(b["text"]["text"] for b in ephemeral["blocks"] if b["type"] == "section")


async def _click_trace(
    harness: Harness, answer: dict[str, Any], *, channel: str = "C0001", user: str = "U0USER"
) -> dict[str, Any]:
    before = len(harness.fake.ephemerals())
    status, _ = await harness.slack.act(
        _trace_button(answer),
        channel=channel,
        user=user,
        thread_ts=THREAD,
        message_ts=_answer_ts(harness, answer),
    )
    assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == before + 1)
    return harness.fake.ephemerals()[-1]


async def test_how_i_found_this_shows_the_trace_only_to_the_asker(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = await _ask(harness, "How do the engineering and security policies differ on production access?")
    posts_before = len(harness.fake.ok_calls("chat.postMessage"))
    # Someone else in the channel clicks: told privately that only the asker can open it, and
    # shown nothing of the trace.
    refused = await _click_trace(harness, answer, user=OTHER_USER)
    assert (refused["channel"], refused["user"], refused["thread_ts"]) == ("C0001", OTHER_USER, THREAD)
    assert refused["text"] == trace_messages.TRACE_ASKER_ONLY
    assert trace_messages.TRACE_TITLE not in json.dumps(refused) and not re.search(
        r"p_[0-9a-f]{20}", json.dumps(refused)
    )
    # The asker clicks: the trace, to them only (an ephemeral message in the answer's thread).
    shown = await _click_trace(harness, answer)
    assert (shown["channel"], shown["user"], shown["thread_ts"]) == ("C0001", ASKER, THREAD)
    assert len(harness.fake.ok_calls("chat.postMessage")) == posts_before  # nothing in the channel
    text = _shown(shown)
    assert shown["text"] == trace_messages.TRACE_TITLE
    # Every collection searched, with its query and its hits (passage ids and their scores).
    for title in ("Engineering handbook", "Security policy"):
        assert re.search(rf"• {title}: \"[^\"]+\": \d+ sources? in [\d.]+ s", text), text
    assert re.search(r"◦ 1\. .+ \(p_[0-9a-f]{20}\): (word [\d.]+, meaning [\d.]+, )?fused [\d.]+", text), text
    # The passages the answer cites are among the hits shown.
    assert harness.server.feedback is not None
    record = await harness.server.feedback.answer(_trace_button(answer)["value"])
    assert record is not None and record.passage_ids
    assert set(record.passage_ids) <= set(re.findall(r"p_[0-9a-f]{20}", text))
    assert "Plan: a comparative question" in text and "Answer: answered" in text
    assert trace_messages.TRACE_NO_MODEL in text  # no model configured: no model call
    # The sentences the answer passed over, each with its text and the rule that left it out.
    why = "|".join(re.escape(words) for words in trace_messages.TRACE_DROP_REASONS.values())
    assert re.search(rf'^• Dropped: "[^"]+": (?:{why})$', text, re.MULTILINE), text
    assert harness.server.metrics.registry.get_sample_value("confer_traces_shown_total") == 1.0

    # The stored trace, from the terminal; a vote names it.
    question_id = _trace_button(answer)["value"]
    await harness.slack.act(_feedback_click(answer, "positive"), thread_ts=THREAD, message_ts="1.2")
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 3)
    capsys.readouterr()
    assert await _confer(["trace", question_id]) == 0
    printed = capsys.readouterr().out
    assert "Engineering handbook" in printed and "Security policy" in printed and "fused" in printed
    assert await _confer(["trace", question_id, "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert {b["collection"] for r in stored["rounds"] for b in r["branches"]} == {"engineering", "security"}
    assert await _confer(["feedback"]) == 0
    assert f"trace: confer trace {question_id}" in capsys.readouterr().out
    assert await _confer(["feedback", "--json"]) == 0
    assert [v["traced"] for v in json.loads(capsys.readouterr().out)["votes"]] == [True]
    assert await _confer(["trace", "0000000000000000"]) == 1
    assert trace_messages.TRACE_NOT_FOUND in capsys.readouterr().err


async def test_a_trace_shown_where_a_collection_may_not_be_searched_leaves_its_passages_out(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (sample_dir / "collections.yaml").open("a") as file:
        file.write(
            "channels:\n"
            "  C0001: {allow: [engineering, security, people, product]}\n"
            "  C0NARROW: {allow: [engineering]}\n"
        )
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")  # the answer is a message of its own
    async with running_harness(sample_dir, monkeypatch) as harness:
        answer = await _ask(harness, "How long is parental leave?")
        wide = _shown(await _click_trace(harness, answer))
        people_ids = set(re.findall(r"p_[0-9a-f]{20}", wide))
        assert "People policies" in wide and people_ids and "20 weeks" in wide
        # The same answer's trace asked for from a channel that may search only engineering.
        narrow = await _click_trace(harness, answer, channel="C0NARROW")
        text = _shown(narrow)
        assert narrow["user"] == "U0USER" and narrow["channel"] == "C0NARROW"
        assert "People policies" not in text and "20 weeks" not in text
        assert not people_ids & set(re.findall(r"p_[0-9a-f]{20}", text))


async def test_with_a_model_the_trace_names_each_model_call_and_each_dropped_sentence(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = await FakeLLM(lie="number").start()  # every sentence it writes changes a number
    monkeypatch.setenv("LLM_BASE_URL", llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    try:
        async with running_harness(sample_dir, monkeypatch) as harness:
            answer = await _ask(harness, "How long is parental leave? in:people")
            text = _shown(await _click_trace(harness, answer))
    finally:
        await llm.stop()
    assert llm.lies, "the fake changed no sentence"
    # Each request the model got during the research is one line, with its purpose and model.
    made = [s for s in llm.stages() if s not in ("suggest", "rewrite")]
    calls = re.findall(r"^• ([a-z ]+) with fake-model, [\d.]+ s, \d+ \+ \d+ tokens: ok$", text, re.MULTILINE)
    assert len(calls) == len(made) and "plan" in calls and "draft" in calls, (calls, made)
    # Each sentence written with a changed number was dropped: the trace names it and says why.
    for lie in llm.lies:
        assert f'Dropped: "{lie}": a number its source does not give' in text, (lie, text)
