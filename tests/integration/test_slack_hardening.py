"""Attacks and failures at the Slack edge: what the endpoint answers, what is logged, what is posted."""

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot import messages
from bot.server import build_server
from bot.settings import SettingsError, load_settings
from retrieval.collections import load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.slack_api import FakeSlackApi
from tests.integration.conftest import Harness, running_harness

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


async def _raw(harness: Harness, body: str, headers: dict[str, str]) -> int:
    async with harness.http.post(harness.slack.url, data=body.encode(), headers=headers) as response:
        await response.read()
        return response.status


async def test_malformed_and_unauthenticated_requests_get_4xx_with_at_most_one_warning_each(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    now = str(int(time.time()))
    unsigned: list[tuple[str, dict[str, str]]] = [
        ("garbage", {"Content-Type": JSON}),
        ("{}", {"Content-Type": JSON, "X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=1"}),
        ("{}", {"Content-Type": JSON, "X-Slack-Request-Timestamp": now}),
        ("{not json", {"Content-Type": JSON, "X-Slack-Request-Timestamp": now, "X-Slack-Signature": "v0=00"}),
        ("payload=%7Bbad", {"Content-Type": FORM, "X-Slack-Request-Timestamp": "", "X-Slack-Signature": ""}),
        ("\xff\xfe", {"Content-Type": "text/plain", "X-Slack-Request-Timestamp": "9" * 40}),
    ]
    signed_bodies: list[tuple[str, str]] = [
        ("{not json", JSON),
        ("[1, 2]", JSON),
        ('"text"', JSON),
        (json.dumps({"type": "event_callback", "event": "a string"}), JSON),
        (json.dumps({"type": "event_callback", "event": {"type": "app_mention", "channel": 5}}), JSON),
        (json.dumps({"type": "event_callback"}), JSON),
        (urlencode({"payload": "{bad"}), FORM),
        (urlencode({"payload": "[]"}), FORM),
        (urlencode({"payload": json.dumps({"type": "block_actions", "actions": "x"})}), FORM),
        ("%%%", FORM),
        ("", FORM),
    ]
    caplog.set_level(logging.INFO)
    caplog.clear()
    statuses = []
    for body, headers in unsigned * 5:
        statuses.append(await _raw(harness, body, headers))
    assert all(status == 401 for status in statuses), statuses
    for body, content_type in signed_bodies:
        status, _ = await harness.slack.send(body, content_type)
        statuses.append(status)
        assert 400 <= status < 500, (body, status)
    await asyncio.sleep(0.2)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= len(statuses)
    assert not [r for r in warnings if r.levelno >= logging.ERROR or r.exc_info], [
        r.getMessage() for r in warnings
    ]
    assert harness.fake.posts() == []
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_slack_requests_rejected_total", {"reason": "signature"}) == 30
    # A valid request still works afterwards.
    await harness.slack.mention("How long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)


@pytest.mark.parametrize("error", ["internal_error", "service_unavailable", "request_timeout", "fatal_error"])
async def test_a_temporary_ok_false_on_the_first_post_still_gets_the_question_answered(
    harness: Harness, error: str
) -> None:
    harness.fake.script("chat.postMessage", error=error)
    status, body = await harness.slack.command("in:people How much is the home office budget?")
    assert status == 200 and body == ""
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    root, _, answer = harness.fake.posts()
    assert root["text"] == "<@U0USER> asked: How much is the home office budget?"
    assert "1,000 euros" in answer["text"]


async def test_a_5xx_then_a_temporary_error_on_a_mention_is_retried(harness: Harness) -> None:
    harness.fake.script("chat.postMessage", status=503)
    harness.fake.script("chat.postMessage", error="service_unavailable")
    await harness.slack.mention("How long is parental leave?", ts="1700000005.000500")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert {p["thread_ts"] for p in harness.fake.posts()} == {"1700000005.000500"}
    registry = harness.server.metrics.registry
    retried = {"method": "chat.postMessage", "outcome": "server_error"}
    assert registry.get_sample_value("confer_slack_api_calls_total", retried) == 2.0


async def test_a_replayed_ask_within_the_window_posts_once(harness: Harness) -> None:
    body = harness.slack.command_body("in:people How much is the home office budget?")
    for _ in range(3):
        status, _ = await harness.slack.send(body, FORM)
        assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    await harness.slack.command("in:product what is the rate limit for Growth accounts?")  # a new trigger_id
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    roots = [p for p in harness.fake.posts() if "asked:" in p["text"]]
    assert [r["text"].split("asked: ")[1] for r in roots] == [
        "How much is the home office budget?",
        "what is the rate limit for Growth accounts?",
    ]
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_events_deduplicated_total") == 2.0


async def test_ask_where_confer_cannot_post_is_answered_privately_through_response_url(
    harness: Harness,
) -> None:
    for place, error in (("D0DIRECT", "channel_not_found"), ("C0NOTJOINED", "not_in_channel")):
        harness.fake.script("chat.postMessage", error=error)
        status, body = await harness.slack.command(
            "in:people How much is the home office budget?", channel=place
        )
        assert status == 200 and body == ""
        await harness.fake.wait_for(lambda: len(harness.fake.responses()) >= 2)
        note, answer = harness.fake.responses()
        assert note == {"response_type": "ephemeral", "text": messages.ANSWERING_PRIVATELY}
        assert answer["response_type"] == "ephemeral" and "1,000 euros" in answer["text"]
        assert any(b["type"] == "context" and "*[1]*" in json.dumps(b) for b in answer["blocks"])
        assert harness.fake.posts() == [] and harness.fake.answers() == []
        harness.fake.calls.clear()
    registry = harness.server.metrics.registry
    told = {"surface": "command", "told": "response_url"}
    assert registry.get_sample_value("confer_questions_undelivered_total", told) == 2.0


async def test_a_mention_whose_thread_cannot_be_posted_tells_the_asker(harness: Harness) -> None:
    harness.fake.script("chat.postMessage", error="is_archived", times=2)
    await harness.slack.mention("How long is parental leave?", channel="C0ARCHIVED")
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("chat.postEphemeral")))
    [ephemeral] = harness.fake.ok_calls("chat.postEphemeral")
    assert ephemeral.params["text"] == messages.NOT_POSTED and ephemeral.params["user"] == "U0USER"
    registry = harness.server.metrics.registry
    told = {"surface": "mention", "told": "ephemeral"}
    assert registry.get_sample_value("confer_questions_undelivered_total", told) == 1.0


async def test_a_response_url_that_is_not_slacks_is_never_called(harness: Harness) -> None:
    # A host that records every request and would answer 200: the configured Web API's host but
    # another port, so only the allow-list stands between the forged response_url and a request.
    elsewhere = await FakeSlackApi().start()
    try:
        harness.slack.response_url = elsewhere.response_url
        harness.fake.script("chat.postMessage", error="channel_not_found")
        await harness.slack.command("in:people How much is the home office budget?", channel="D0DIRECT")
        registry = harness.server.metrics.registry

        def told(how: str) -> float:
            labels = {"surface": "command", "told": how}
            return registry.get_sample_value("confer_questions_undelivered_total", labels) or 0.0

        await harness.fake.wait_for(lambda: told("none") + told("response_url") == 1.0)
        assert elsewhere.calls == []
        assert told("none") == 1.0
        assert harness.fake.responses() == []
    finally:
        await elsewhere.stop()


async def test_no_auto_linkable_address_from_a_document_is_posted(harness: Harness, sample_dir: Path) -> None:
    (sample_dir / "samples/product/escalation.md").write_text(
        "# Escalation contacts\n\nFor escalation contacts, sign in at www.evil.example/login, "
        "write to attacker@evil.example, or call the gateway at 203.0.113.7 directly.\n"
    )
    config = load_collections(sample_dir / "collections.yaml")
    product = config.get("product")
    assert product is not None
    await index_collection(harness.backend, product, config)
    await harness.slack.mention("in:product who are the escalation contacts?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    posted = json.dumps(harness.fake.posts(), ensure_ascii=False)
    assert "escalation" in posted.lower() and "attacker" in posted
    for live in ("www.evil", "evil.example", "@evil", "203.0.113.7"):
        assert live not in posted, live


async def test_readyz_is_ready_only_while_every_collection_has_passages(
    harness: Harness, sample_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with harness.http.get(harness.base + "/readyz") as response:
        assert response.status == 200
    config = load_collections(sample_dir / "collections.yaml")
    people = config.get("people")
    assert people is not None
    await harness.backend.drop_collection(people)
    async with harness.http.get(harness.base + "/readyz") as response:
        assert response.status == 503 and (await response.json()) == {"status": "not ready"}
    async with harness.http.get(harness.base + "/metrics") as response:
        assert "confer_ready 0.0" in await response.text()
    await index_collection(harness.backend, people, config)
    async with harness.http.get(harness.base + "/readyz") as response:
        assert response.status == 200


async def test_serve_on_an_empty_data_dir_says_what_to_run_and_is_not_ready(
    harness: Harness, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = harness.server.settings.model_copy(update={"data_dir": tmp_path / "empty"})
    caplog.set_level(logging.WARNING, logger="bot.server")
    server = build_server(settings, host="127.0.0.1")
    server.port = 0
    await server.start()
    try:
        [line] = [r.getMessage() for r in caplog.records if r.name == "bot.server"]
        assert line.startswith(
            "not ready: no passages indexed for engineering, security, people, product; run `confer index`"
        )
        async with harness.http.get(f"http://127.0.0.1:{server.port}/readyz") as response:
            assert response.status == 503
    finally:
        await server.stop()


async def test_mentions_sent_by_bots_are_ignored_unless_the_bot_is_allowed(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Confer instances, or any echo bot, must not answer each other in a loop: a mention from
    a bot or an app is ignored, whatever shape it comes in, unless CONFER_SLACK_ALLOWED_BOTS names it."""
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    monkeypatch.setenv("CONFER_SLACK_ALLOWED_BOTS", "B0FRIEND, A0FRIENDAPP")
    async with running_harness(sample_dir, monkeypatch) as harness:
        echo = {"id": "B0ECHO", "app_id": "A0ECHO", "name": "echo"}
        shapes: list[tuple[str, dict[str, Any]]] = [
            ("U0ECHOBOT", {"bot_id": "B0ECHO", "bot_profile": echo}),  # an app's bot user
            ("U0ECHOBOT", {"bot_profile": echo}),
            ("", {"subtype": "bot_message", "bot_id": "B0ECHO"}),  # a legacy integration
            ("", {"subtype": "bot_message"}),
        ]
        for n, (user, shape) in enumerate(shapes):
            await harness.slack.mention(
                "How long is parental leave?", ts=f"1700000100.00000{n}", user=user, **shape
            )
        friend = {"id": "B0OTHER", "app_id": "A0FRIENDAPP", "name": "friend"}
        await harness.slack.mention(
            "What is the rate limit for Growth accounts?",
            ts="1700000200.000001",
            user="U0FRIENDBOT",
            bot_id="B0OTHER",
            bot_profile=friend,
        )
        await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
        await harness.server.acks.flush(2)
        await harness.server.scheduler.drain(5)
        assert [p["thread_ts"] for p in harness.fake.posts()] == ["1700000200.000001"] * 2  # status, answer
        assert harness.fake.ephemerals() == []
        assert all("parental" not in query for _, query in harness.backend.searches)


def test_the_bot_allow_list_takes_slack_ids_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFER_SLACK_ALLOWED_BOTS", "B0FRIEND,,A0APP ")
    assert load_settings(env_file=None).slack_allowed_bots == {"B0FRIEND", "A0APP"}
    monkeypatch.setenv("CONFER_SLACK_ALLOWED_BOTS", "B0FRIEND,U0PERSON")
    with pytest.raises(SettingsError, match=r"CONFER_SLACK_ALLOWED_BOTS: .*U0PERSON"):
        load_settings(env_file=None)
    monkeypatch.delenv("CONFER_SLACK_ALLOWED_BOTS")
    assert load_settings(env_file=None).slack_allowed_bots == frozenset()


def _answer_post(params: dict[str, Any]) -> bool:
    return bool(params.get("blocks"))


@pytest.mark.parametrize("drop", ["after", "before"])
async def test_a_connection_lost_around_the_answer_post_leaves_exactly_one_answer(
    harness: Harness, drop: str
) -> None:
    """``after``: Slack applied the post and the connection broke before its answer came back (a
    blind resend posts the answer twice); ``before``: it never reached Slack (it must still land)."""
    harness.fake.script("chat.postMessage", drop=drop, when=_answer_post)  # type: ignore[arg-type]
    await harness.slack.mention("in:people How long is parental leave?", ts="1700000300.000001")
    [status_ts] = await _status_posted(harness)
    await harness.fake.wait_for(lambda: "Done in" in (harness.fake.updates(status_ts) or [""])[-1])
    await harness.server.scheduler.drain(5)
    shown = harness.fake.threads[("C0001", "1700000300.000001")]
    answers = [m for m in shown if m.get("blocks")]
    assert len(answers) == 1 and "20 weeks" in answers[0]["text"]
    assert [m["ts"] for m in shown] == sorted(m["ts"] for m in shown)  # the status above the answer
    assert harness.fake.ephemerals() == []
    assert not any(
        text in (messages.UNEXPECTED, messages.STATUS_POST_FAILED, messages.STATUS_UNEXPECTED)
        for text in [m["text"] for m in shown] + harness.fake.updates(status_ts)
    )


async def _status_posted(harness: Harness) -> list[str]:
    await harness.fake.wait_for(lambda: bool(harness.fake.status_messages()))
    return harness.fake.status_messages()


@pytest.mark.parametrize("drop", ["after", "before"])
async def test_a_cached_direct_answer_whose_post_may_be_lost_is_never_called_unanswered(
    harness: Harness, drop: str
) -> None:
    """A direct message answered from the answer cache gets no status message (the answer is there
    at once). When the answer's post loses its reply (``after``: Slack applied it; ``before``: it
    never got it) and the conversation's history cannot be read to look for it, nobody knows
    whether it landed: the asker is told once that it may not have been posted, never that the
    question was not answered (with the answer in front of them). The fault matrix met this by
    timing: under load a direct message came after another cell's same question had been answered."""
    question = "in:people How long is parental leave?"
    await harness.slack.message(question, channel="D0DMONE", channel_type="im")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    harness.fake.script("chat.postMessage", drop=drop, when=_answer_post)  # type: ignore[arg-type]
    harness.fake.script("conversations.history", error="channel_not_found", always=True)
    await harness.slack.message(question, channel="D0DMTWO", channel_type="im")

    def told() -> list[str]:
        posts = [p for p in harness.fake.posts() if p["channel"] == "D0DMTWO" and not p.get("blocks")]
        return [p["text"] for p in posts] + [e["text"] for e in harness.fake.ephemerals()]

    await harness.fake.wait_for(lambda: bool(told()))
    await harness.server.scheduler.drain(5)
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_answer_cache_total", {"outcome": "hit"}) == 1.0
    assert told() == [messages.POST_UNCERTAIN]  # no status message, no "not answered"
    landed = [a for a in harness.fake.answers() if a["channel"] == "D0DMTWO"]
    assert len(landed) == (1 if drop == "after" else 0)


async def test_an_answer_whose_post_may_be_lost_after_a_lost_status_is_never_called_unanswered(
    harness: Harness,
) -> None:
    """The fault matrix's failure under CPU load, made deterministic: the status message's post
    reached Slack but its reply did not (under load: slower than the call's time-out), so Confer
    does not know its status is there; then the answer's post loses its reply too, and the thread
    cannot be read to look for it. The answer is there: the asker is told it may not have been
    posted, never that the question was not answered."""
    thread = "1700000500.000001"
    harness.fake.script("chat.postMessage", drop="after", when=lambda p: not p.get("blocks"))
    harness.fake.script("chat.postMessage", drop="after", when=_answer_post)
    harness.fake.script("conversations.replies", error="thread_not_found", always=True)
    await harness.slack.mention("in:people How long is parental leave?", ts=thread)

    def said() -> list[str]:
        shown = harness.fake.threads.get(("C0001", thread), [])
        return [m["text"] for m in shown if not m.get("blocks")][1:]  # after the status message

    await harness.fake.wait_for(lambda: bool(said() or harness.fake.ephemerals()))
    await harness.server.scheduler.drain(5)
    assert harness.fake.ephemerals() == []
    assert said() == [messages.POST_UNCERTAIN]
    [answer] = harness.fake.answers()
    assert "20 weeks" in answer["text"]
