"""Feedback people see and suggested follow-ups, through the real server and the fake Slack API:
👍 thanked privately in the thread, 👎 opens a form whose reason is kept, every vote stored with the
answer it rates (SQLite and PostgreSQL) and listed by ``confer feedback``; a suggested follow-up's
button asks its question in the same thread."""

import asyncio
import json
import logging
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot import messages
from bot.terminal.cli import main
from tests.fakes.llm_api import FakeLLM, Reply
from tests.integration.conftest import Harness, _harness
from tests.integration.test_slack_conversations import POSTGRES_URL, _postgres_answers, _server

THREAD = "1700000001.000100"


async def _confer(argv: list[str]) -> int:
    """``confer ARGS`` as people run it (its own event loop, so in a thread here); the logging it
    sets up for itself is put back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return await asyncio.to_thread(main, argv)
    finally:
        root.handlers[:], root.level = handlers, level


def _block(post: dict[str, Any], kind: str) -> dict[str, Any]:
    """The post's one block of ``kind`` ("How I found this" has an actions block of its own)."""
    blocks: list[dict[str, Any]] = [
        b for b in post["blocks"] if b["type"] == kind and not b.get("block_id", "").startswith("trace:")
    ]
    [block] = blocks
    return block


def _feedback_click(answer: dict[str, Any], which: str) -> dict[str, Any]:
    """What Slack sends for a click on the answer's feedback_buttons (``positive``/``negative``)."""
    block = _block(answer, "context_actions")
    element = block["elements"][0]
    button = element[f"{which}_button"]
    return {
        "type": "feedback_buttons",
        "action_id": element["action_id"],
        "block_id": block["block_id"],
        "value": button["value"],
        "text": button["text"],
    }


def _answer_ts(harness: Harness, answer: dict[str, Any]) -> str:
    return next(
        str(c.response["ts"]) for c in harness.fake.ok_calls("chat.postMessage") if c.params is answer
    )


async def _ask(harness: Harness, question: str, thread: str = THREAD) -> dict[str, Any]:
    before = len(harness.fake.answers())
    await harness.slack.mention(question, ts=thread)
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == before + 1)
    return harness.fake.answers()[-1]


async def test_thumbs_up_is_kept_with_the_answer_and_thanked_privately_in_the_thread(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = await _ask(harness, "How long is parental leave? in:people")
    status, _ = await harness.slack.act(
        _feedback_click(answer, "positive"), thread_ts=THREAD, message_ts=_answer_ts(harness, answer)
    )
    assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    [thanks] = harness.fake.ephemerals()
    assert (thanks["channel"], thanks["user"], thanks["thread_ts"]) == ("C0001", "U0USER", THREAD)
    assert thanks["text"] == messages.FEEDBACK_THANKS
    assert not harness.fake.ok_calls("views.open")
    assert harness.server.metrics.registry.get_sample_value("confer_feedback_total", {"vote": "up"}) == 1.0

    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert vote.vote == "up" and vote.reason is None
    assert (vote.platform, vote.workspace, vote.channel) == ("slack", "T0001", "C0001")
    assert vote.collections == ("people",)
    assert "20 weeks" in vote.answer and vote.passage_ids
    sources = [e for b in answer["blocks"] if b["type"] == "context" for e in b["elements"]]
    assert len(vote.passage_ids) == sum(e["text"].startswith("*[") for e in sources)  # one per source
    assert f"up:{vote.question_id}" == _feedback_click(answer, "positive")["value"]

    capsys.readouterr()
    assert await _confer(["feedback", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["votes"]
    assert [(v["vote"], v["question_id"], v["collections"]) for v in listed] == [
        ("up", vote.question_id, ["people"])
    ]
    assert await _confer(["feedback", "--since", "2999-01-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"votes": []}
    assert await _confer(["feedback"]) == 0
    table = capsys.readouterr().out
    assert vote.question_id in table and "1 votes: 1 👍, 0 👎" in table
    assert await _confer(["feedback", "--since", "last week"]) == 2
    assert "--since" in capsys.readouterr().err


def _form_values(reason: str, comment: str | None) -> dict[str, Any]:
    return {
        "reason": {
            "reason": {
                "type": "radio_buttons",
                "selected_option": {"value": reason, "text": {"text": reason}},
            }
        },
        "comment": {"comment": {"type": "plain_text_input", "value": comment}},
    }


async def _thumbs_down_with_a_reason(harness: Harness, thread: str) -> str:
    answer = await _ask(harness, "How long is parental leave? in:people", thread)
    await harness.slack.act(
        _feedback_click(answer, "negative"), thread_ts=thread, trigger_id="9.8.7", message_ts="1.1"
    )
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("views.open")))
    [opened] = harness.fake.ok_calls("views.open")
    assert opened.params["trigger_id"] == "9.8.7"  # the click's own trigger, within its 3 seconds
    view = opened.params["view"]
    assert view["type"] == "modal" and view["callback_id"] == "confer_feedback"
    assert harness.fake.ephemerals() == []  # the form comes first
    status, _ = await harness.slack.submit_view(view, _form_values("outdated", "The policy changed in May."))
    assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    [thanks] = harness.fake.ephemerals()
    assert (thanks["user"], thanks["thread_ts"], thanks["text"]) == (
        "U0USER",
        thread,
        messages.FEEDBACK_REASON_THANKS,
    )
    return str(_feedback_click(answer, "negative")["value"]).removeprefix("down:")


async def test_a_not_found_reply_has_feedback_buttons_and_a_thumbs_down_on_it_is_kept(
    harness: Harness,
) -> None:
    # A wrong "not found" is the most useful vote: the reply carries the buttons like an answer.
    reply = await _ask(harness, "Where do I park my unicycle? in:people")
    assert messages.NOTHING_FOUND.split("{")[0] in reply["text"]
    click = _feedback_click(reply, "negative")
    await harness.slack.act(
        click, thread_ts=THREAD, trigger_id="9.8.6", message_ts=_answer_ts(harness, reply)
    )
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("views.open")))
    [opened] = harness.fake.ok_calls("views.open")
    status, _ = await harness.slack.submit_view(
        opened.params["view"], _form_values("wrong", "It is in the handbook.")
    )
    assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert (vote.vote, vote.reason, vote.comment) == ("down", "wrong", "It is in the handbook.")
    assert vote.question_id == str(click["value"]).removeprefix("down:")
    assert messages.NOTHING_FOUND.split("{")[0] in vote.answer and vote.collections == ("people",)


async def test_a_double_click_is_one_vote(harness: Harness) -> None:
    answer = await _ask(harness, "How long is parental leave? in:people")
    for _ in range(2):
        await harness.slack.act(
            _feedback_click(answer, "positive"), thread_ts=THREAD, message_ts=_answer_ts(harness, answer)
        )
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 2)  # each click is thanked
    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert vote.vote == "up"


async def test_thumbs_down_opens_a_form_and_its_reason_is_kept(harness: Harness) -> None:
    question_id = await _thumbs_down_with_a_reason(harness, THREAD)
    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert (vote.question_id, vote.vote, vote.reason) == (question_id, "down", "outdated")
    assert vote.comment == "The policy changed in May." and "20 weeks" in vote.answer
    assert harness.server.metrics.registry.get_sample_value("confer_feedback_total", {"vote": "down"}) == 1.0


HOSTILE = "Wrong\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x9b0m\u202eevil\rdone"
# What must never reach the operator's terminal raw: ESC, BEL, CSI, a carriage return, an override.
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


async def test_a_comment_with_terminal_escapes_is_stored_without_them_and_printed_escaped(
    harness: Harness, sample_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = await _ask(harness, "How long is parental leave? in:people")
    await harness.slack.act(_feedback_click(answer, "negative"), thread_ts=THREAD, trigger_id="9.8.7")
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("views.open")))
    [opened] = harness.fake.ok_calls("views.open")
    await harness.slack.submit_view(opened.params["view"], _form_values("wrong", HOSTILE))
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert vote.comment == "Wrong]0;pwned[2J[31mred0mevildone"  # every control character gone

    # A vote stored before comments were cleaned: printing escapes what it holds.
    with sqlite3.connect(sample_dir / ".confer/feedback.sqlite") as db:
        db.execute("UPDATE confer_feedback_votes SET comment = ?, answer = ?", (HOSTILE, HOSTILE))
    capsys.readouterr()
    assert await _confer(["feedback"]) == 0
    printed = capsys.readouterr().out
    assert not RAW_CONTROLS.search(printed)
    assert "reason: wrong: Wrong\\x1b]0;pwned\\x07\\x1b[2J" in printed
    assert "\\x9b0m\\u202eevil\\rdone" in printed
    assert await _confer(["feedback", "--json"]) == 0
    listed = capsys.readouterr().out
    assert not RAW_CONTROLS.search(listed)
    assert [v["comment"] for v in json.loads(listed)["votes"]] == [HOSTILE]  # the same value, escaped


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
async def test_a_vote_on_one_replica_rates_an_answer_another_posted(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, database: str
) -> None:
    if database == "postgresql":
        if not _postgres_answers():
            pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: PostgreSQL feedback not tested")
        monkeypatch.setenv("DATABASE_URL", POSTGRES_URL)
    thread = f"1702{uuid.uuid4().int % 10**6:06d}.000100"  # the PostgreSQL database outlives the test
    async with _server(sample_dir, monkeypatch) as start:
        one = await start()
        answer = await _ask(one, "How long is parental leave? in:people", thread)
        await one.server.stop()  # a restart, or another replica, takes the click
        two = await start()
        await two.slack.act(_feedback_click(answer, "positive"), thread_ts=thread)
        await two.fake.wait_for(lambda: len(two.fake.ephemerals()) == 1)
        assert two.server.feedback is not None
        question_id = str(_feedback_click(answer, "positive")["value"]).removeprefix("up:")
        [vote] = [v for v in await two.server.feedback.votes() if v.question_id == question_id]
        assert "20 weeks" in vote.answer and vote.collections == ("people",)


async def test_a_suggested_followup_is_asked_in_the_same_thread(harness: Harness) -> None:
    answer = await _ask(harness, "What is the rate limit for Growth accounts? in:product")
    suggested = _block(answer, "actions")
    first = suggested["elements"][0]
    assert first["value"] == "What is the rate limit for Enterprise accounts?"
    assert first["text"]["text"] == first["value"]  # short enough to show whole
    click = {**first, "block_id": suggested["block_id"]}
    click.pop("text")
    await harness.slack.act(click, thread_ts=THREAD, user="U0OTHER")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    followup = harness.fake.answers()[1]
    assert followup["thread_ts"] == THREAD
    assert "200 requests per second" in followup["text"]
    statuses = [
        str(c.params.get("text", ""))
        for c in harness.fake.ok_calls("chat.postMessage") + harness.fake.ok_calls("chat.update")
        if not c.params.get("blocks")
    ]
    assert any("Searching: What is the rate limit for Enterprise accounts?" in t for t in statuses)

    await harness.slack.act(click, thread_ts=THREAD, user="U0THIRD")  # asked once, even by others
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    [told] = harness.fake.ephemerals()
    assert (told["user"], told["text"]) == ("U0THIRD", messages.SUGGESTION_ALREADY_ASKED)
    assert len(harness.fake.answers()) == 2


async def test_a_suggestion_for_a_collection_the_channel_may_not_search_is_refused_privately(
    harness: Harness,
) -> None:
    click = {"type": "button", "action_id": "suggest_0", "block_id": "suggest:x", "value": "in:nope What?"}
    await harness.slack.act(click, thread_ts=THREAD)
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    assert "nope" in harness.fake.ephemerals()[0]["text"]
    assert harness.fake.answers() == []


async def test_a_thumbs_down_whose_form_cannot_open_is_still_kept_and_thanked(harness: Harness) -> None:
    answer = await _ask(harness, "How long is parental leave? in:people")
    harness.fake.script("views.open", error="expired_trigger_id")
    await harness.slack.act(_feedback_click(answer, "negative"), thread_ts=THREAD)
    await harness.fake.wait_for(lambda: len(harness.fake.ephemerals()) == 1)
    assert harness.fake.ephemerals()[0]["text"] == messages.FEEDBACK_REASON_THANKS
    assert harness.server.feedback is not None
    [vote] = await harness.server.feedback.votes()
    assert (vote.vote, vote.reason) == ("down", None) and "20 weeks" in vote.answer


async def test_with_a_model_the_buttons_are_its_checked_suggestions(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = await FakeLLM().start()
    llm.script(
        "suggest",
        Reply(
            content=json.dumps(
                {
                    "questions": [
                        "Can parental leave be taken in blocks?",
                        "Post <!channel> now?",  # markup: dropped
                        "What is the capital of Mongolia?",  # about nothing the sources name: dropped
                    ]
                }
            )
        ),
    )
    monkeypatch.setenv("LLM_BASE_URL", llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    try:
        async with _server(sample_dir, monkeypatch) as start:
            harness = await start()
            answer = await _ask(harness, "How long is parental leave? in:people")
            buttons = _block(answer, "actions")["elements"]
            assert [b["value"] for b in buttons] == ["Can parental leave be taken in blocks?"]
            assert "suggest" in llm.stages()
    finally:
        await llm.stop()


async def test_failing_suggestions_never_cost_the_answer(harness: Harness) -> None:
    async def broken(*_: object) -> tuple[()]:
        raise RuntimeError("a bug in the suggestions")

    harness.server.service.suggest = broken  # type: ignore[method-assign,assignment]
    answer = await _ask(harness, "How long is parental leave? in:people")
    assert "20 weeks" in answer["text"]
    assert [b["type"] for b in answer["blocks"]][-1] == "context_actions"  # 👍/👎 still there


async def test_nothing_found_offers_the_collection_that_covers_it_and_a_click_asks_there(
    harness: Harness,
) -> None:
    answer = await _ask(harness, "in:security how many weeks of parental leave?")
    assert "People policies may cover it" in answer["text"]
    # a "not found" is rated like an answer (a wrong one is the most useful vote)
    assert [b["type"] for b in answer["blocks"] if b["type"] == "context_actions"] == ["context_actions"]
    [button] = _block(answer, "actions")["elements"]
    assert button["text"]["text"] == "Ask in People policies"
    assert button["value"] == "in:people how many weeks of parental leave?"
    await harness.slack.act(
        {
            "type": "button",
            "action_id": button["action_id"],
            "block_id": _block(answer, "actions")["block_id"],
            "value": button["value"],
        },
        thread_ts=THREAD,
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    followup = harness.fake.answers()[1]
    assert followup["thread_ts"] == THREAD and "20 weeks" in followup["text"]


@pytest.fixture(params=["edit", "stream"])
async def slow_model_harness(
    request: pytest.FixtureRequest, sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Harness, str]]:
    """A model that takes its time writing suggested follow-ups, on either Slack path."""
    llm = await FakeLLM().start()
    question = json.dumps({"questions": ["Can parental leave be taken in blocks?"]})
    llm.script("suggest", Reply(content=question, delay=3.0))
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", request.param)
    monkeypatch.setenv("LLM_BASE_URL", llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    try:
        async for running in _harness(sample_dir, monkeypatch):
            yield running, request.param
    finally:
        await llm.stop()


def _suggestion_values(blocks: list[dict[str, Any]]) -> list[str]:
    return [
        e["value"]
        for b in blocks
        if b["type"] == "actions" and b["block_id"].startswith("suggest:")
        for e in b["elements"]
    ]


async def test_a_slow_models_suggestions_are_added_after_the_answer_not_before(
    slow_model_harness: tuple[Harness, str],
) -> None:
    harness, progress = slow_model_harness
    await harness.slack.mention("How long is parental leave? in:people", ts=THREAD)
    if progress == "stream":
        # The answer's text is appended while the suggestions are still being written; the stream
        # stops with them once they come.
        await harness.fake.wait_for(lambda: bool(harness.fake.finished_streams()), within=30)
        [stream] = harness.fake.finished_streams()
        [stop] = harness.fake.ok_calls("chat.stopStream")
        assert not [c for c in stop.params.get("chunks") or [] if c["type"] == "markdown_text"]
        assert "20 weeks" in stream.text
        assert _suggestion_values(stop.params["blocks"]) == ["Can parental leave be taken in blocks?"]
        return
    # Post and edit: the answer is posted with its 👍/👎 but no suggestions, then edited to add them.
    await harness.fake.wait_for(lambda: bool(harness.fake.answers()))
    [answer] = harness.fake.answers()
    assert _block(answer, "context_actions") and not _suggestion_values(answer["blocks"])
    ts = _answer_ts(harness, answer)

    def edits() -> list[dict[str, Any]]:
        return [c.params for c in harness.fake.ok_calls("chat.update") if c.params.get("ts") == ts]

    await harness.fake.wait_for(lambda: bool(edits()), within=30)
    [edit] = edits()
    assert _suggestion_values(edit["blocks"]) == ["Can parental leave be taken in blocks?"]
    assert _block(edit, "context_actions") == _block(answer, "context_actions")  # the same votes
    assert edit["text"] == answer["text"]
