"""Which Slack ``message`` events are follow-ups, and reading a thread within bounds."""

from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.metrics import build_metrics
from bot.slack.followups import parse_message, read_thread
from bot.slack.gateway import SlackGateway
from retrieval.collections import CollectionsConfig
from tests.fakes.slack_api import FakeSlackApi

BOT = "UCONFER"


def _body(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "channel": "C1", "user": "U1", "text": "and for contractors?", "ts": "2.0"}
    return {"team_id": "T1", "event_id": "Ev1", "event": {**base, **event}}


def test_a_reply_in_a_thread_and_a_dm_are_messages_to_answer() -> None:
    reply = parse_message(_body(thread_ts="1.0", channel_type="channel"), BOT)
    assert reply is not None and reply.place == "thread" and reply.team == "T1"
    dm = parse_message(_body(channel="D1", channel_type="im"), BOT)
    assert dm is not None and dm.place == "dm"
    top = parse_message(_body(channel_type="channel"), BOT)
    assert top is not None and top.place is None  # a top-level channel message is not for Confer


@pytest.mark.parametrize(
    "event",
    [
        {"user": BOT},
        {"bot_id": "B1"},
        {"bot_profile": {"name": "other"}},
        {"subtype": "bot_message"},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "thread_broadcast"},
        {"subtype": "channel_join"},
        {"user": ""},
        {"text": f"<@{BOT}> and for contractors?"},  # the app_mention event answers it
    ],
)
def test_bots_confer_itself_edits_subtypes_and_mentions_are_ignored(event: dict[str, Any]) -> None:
    assert parse_message(_body(thread_ts="1.0", **event), BOT) is None


async def test_read_thread_is_one_bounded_call_keeping_people_before_the_mention() -> None:
    fake = await FakeSlackApi().start()
    try:
        fake.threads[("C1", "1.000000")] = [
            {"user": "U1", "text": "How long is parental leave?", "ts": "1.000000"},
            {"bot_id": "B1", "text": "a bot", "ts": "1.000001"},
            {"user": BOT, "text": "Confer's own answer", "ts": "1.000002"},
            {"user": "U2", "subtype": "channel_join", "text": "joined", "ts": "1.000003"},
            *({"user": "U2", "text": "x" * 300, "ts": f"1.{n:06d}"} for n in range(4, 3000)),
        ]
        gateway = SlackGateway(
            client=AsyncWebClient(token="xoxb-test", base_url=fake.url + "/"), metrics=build_metrics()
        )
        turns = await read_thread(
            gateway, channel="C1", thread_ts="1.000000", before_ts="1.000010", bot_user_id=BOT
        )
        assert [t.question for t in turns][-1] == "How long is parental leave?"  # questions last
        assert len(turns) == 7 and all("bot" not in t.question and "Confer" not in t.question for t in turns)
        bounded = await read_thread(
            gateway, channel="C1", thread_ts="1.000000", before_ts="9", bot_user_id=BOT, max_chars=1000
        )
        assert sum(len(t.question) for t in bounded) <= 1000
        assert len(fake.ok_calls("conversations.replies")) == 2
        assert all(int(c.params["limit"]) == 50 for c in fake.ok_calls("conversations.replies"))
    finally:
        await fake.stop()


def test_status_shows_the_rewritten_followup_neutralized(sample_config: CollectionsConfig) -> None:
    from bot.chat.progress import Row, StatusState
    from bot.slack.blocks import status_text
    from bot.teams.cards import status_lines

    config = sample_config
    state = StatusState(
        phase="researching", rows={"people": Row()}, searching="can <!channel> leave be split up?"
    )
    slack = status_text(state, config)
    assert slack.startswith("Searching: can") and "<!channel>" not in slack
    teams = status_lines(state, config)
    assert teams[0].startswith("Searching: can") and "<!channel>" not in teams[0]
    assert not status_text(StatusState(phase="researching", rows={"people": Row()}), config).startswith(
        "Searching"
    )
