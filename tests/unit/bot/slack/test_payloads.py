import pytest

from bot.slack.payloads import PayloadError, parse_command, parse_mention, strip_bot_mention


def test_mention_thread_is_the_thread_ts_else_the_ts() -> None:
    body = {
        "event_id": "Ev1",
        "team_id": "T1",
        "event": {"channel": "C1", "user": "U1", "text": "hi", "ts": "1.2"},
    }
    assert parse_mention(body).reply_thread == "1.2"
    body["event"]["thread_ts"] = "1.0"  # type: ignore[index]
    assert parse_mention(body).reply_thread == "1.0"
    with pytest.raises(PayloadError):
        parse_mention({"event": {"text": "no channel"}})


def test_only_the_bots_own_mention_is_stripped() -> None:
    assert (
        strip_bot_mention("<@UBOT> ask <@U2> about in:eng deploys", "UBOT")
        == "ask <@U2> about in:eng deploys"
    )
    assert strip_bot_mention("<@UBOT|confer> hi", "UBOT") == "hi"
    assert strip_bot_mention("<@UX> hi", None) == "hi"


def test_command_needs_channel_and_user() -> None:
    assert parse_command({"channel_id": "C1", "user_id": "U1", "text": "list"}).text == "list"
    with pytest.raises(PayloadError):
        parse_command({"text": "x"})


def test_slack_markup_becomes_the_text_people_typed() -> None:
    from bot.slack.payloads import plain_text

    text = "What is the R&amp;D budget? see <https://x.example/a|the wiki> in <#C123|eng> <@U9> <!here> &lt;3"
    assert plain_text(text) == "What is the R&D budget? see the wiki in #eng <3"
    assert plain_text("<https://x.example/b>") == "https://x.example/b"


def test_a_block_action_and_a_feedback_form_are_parsed_at_the_edge() -> None:
    from bot.slack.payloads import parse_block_action, parse_feedback_form

    click = parse_block_action(
        {
            "team": {"id": "T1"},
            "user": {"id": "U1"},
            "channel": {"id": "C1"},
            "trigger_id": "1.2.3",
            "container": {"type": "message", "thread_ts": "1.0"},
            "actions": [{"action_id": "feedback", "block_id": "feedback:q1", "value": "down:q1"}],
        }
    )
    assert (click.team, click.channel, click.user, click.thread_ts, click.value) == (
        "T1",
        "C1",
        "U1",
        "1.0",
        "down:q1",
    )
    with pytest.raises(PayloadError):
        parse_block_action({"user": {"id": "U1"}, "actions": []})
    form = parse_feedback_form(
        {
            "user": {"id": "U1"},
            "view": {
                "private_metadata": '{"vote": "v1", "channel": "C1", "thread": "1.0"}',
                "state": {"values": {"reason": {"reason": {"selected_option": {"value": "wrong"}}}}},
            },
        },
        reason_block="reason",
        comment_block="comment",
    )
    assert (form.vote_id, form.channel, form.thread_ts, form.reason, form.comment) == (
        "v1",
        "C1",
        "1.0",
        "wrong",
        "",
    )
    with pytest.raises(PayloadError):
        parse_feedback_form(
            {"user": {"id": "U1"}, "view": {}}, reason_block="reason", comment_block="comment"
        )
