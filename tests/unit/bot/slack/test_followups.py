"""Which Slack ``message`` events are follow-ups, and reading a thread within bounds."""

from collections.abc import AsyncIterator
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


@pytest.fixture
async def slack() -> AsyncIterator[tuple[FakeSlackApi, SlackGateway]]:
    fake = await FakeSlackApi().start()
    gateway = SlackGateway(
        client=AsyncWebClient(token="xoxb-test", base_url=fake.url + "/"), metrics=build_metrics()
    )
    yield fake, gateway
    await fake.stop()


async def test_read_thread_is_one_bounded_call_keeping_the_first_and_the_last_messages(
    slack: tuple[FakeSlackApi, SlackGateway],
) -> None:
    fake, gateway = slack
    fake.threads[("C1", "1.000000")] = [
        {"user": "U1", "text": "We are expecting a baby in March", "ts": "1.000000", "reply_count": 3000},
        {"bot_id": "B1", "text": "a bot", "ts": "1.000001"},
        {"user": "U2", "subtype": "channel_join", "text": "joined", "ts": "1.000002"},
        *({"user": "U2", "text": f"reply {n} " + "x" * 900, "ts": f"1.{n:06d}"} for n in range(3, 40)),
        {"user": "U2", "text": "Congratulations!", "ts": "1.000040"},
        {"user": BOT, "bot_id": "BCONFER", "text": "Confer's own answer", "ts": "1.000041"},
        {"user": "U3", "subtype": "thread_broadcast", "text": "also sent to the channel", "ts": "1.000042"},
        {"user": "U1", "text": "<@UCONFER> how many weeks can I take?", "ts": "1.000043"},
        *({"user": "U2", "text": f"later {n}", "ts": f"1.{n:06d}"} for n in range(44, 3000)),
    ]
    turns = await read_thread(
        gateway, channel="C1", thread_ts="1.000000", before_ts="1.000043", bot_user_id=BOT
    )
    assert [t.question[:9] for t in turns] == [
        "We are ex",
        "reply 38 ",
        "reply 39 ",
        "Congratul",
        "also sent",
    ]
    assert turns[3].answer == "Confer's own answer"  # Confer's reply to the message before it
    assert all(t.origin == "thread" and len(t.question) <= 800 for t in turns)
    [call] = fake.ok_calls("conversations.replies")
    assert call.params["ts"] == "1.000000" and call.params["latest"] == "1.000043"
    assert int(call.params["limit"]) == 50


@pytest.mark.parametrize(
    "failure",
    [
        {"error": "missing_scope"},  # an app installed without channels:history
        {"error": "thread_not_found"},
        {"status": 429, "retry_after": 30},
        {"status": 503, "times": 2},
    ],
)
async def test_a_thread_that_cannot_be_read_gives_no_turns_and_is_not_waited_on(
    slack: tuple[FakeSlackApi, SlackGateway], failure: dict[str, Any]
) -> None:
    fake, gateway = slack
    fake.threads[("C1", "1.0")] = [{"user": "U1", "text": "We are expecting a baby", "ts": "1.0"}]
    fake.script("conversations.replies", **failure)
    assert await read_thread(gateway, channel="C1", thread_ts="1.0", before_ts="2.0", bot_user_id=BOT) == []
    assert len([c for c in fake.calls if c.method == "conversations.replies"]) == failure.get("times", 1)


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
