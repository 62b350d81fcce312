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
