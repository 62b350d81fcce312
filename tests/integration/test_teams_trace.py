""" "How I found this" in Teams, over real HTTP to the fake Bot Framework connector: the button on an
answer card sends its trace, as a card, in a one-to-one chat with the person who asked (never in
the channel), naming each collection searched with its query and hits and each sentence dropped
with why; anyone else who clicks gets a private message saying only the asker can open it, and
nothing of the trace. A channel that may not search a collection never sees its passages."""

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.chat import trace_messages
from tests.fakes.bot_connector import USER_ID, ConnectorCall
from tests.integration.test_teams import CHANNEL, TeamsHarness, _start, _stop

ASKER, CLICKER = USER_ID, "29:user-2"  # the fake's messages come from USER_ID


@pytest.fixture
async def teams(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TeamsHarness]:
    with (sample_dir / "collections.yaml").open("a") as file:
        file.write(
            "channels:\n"
            f'  "{CHANNEL}": {{allow: [engineering, security, people, product]}}\n'
            '  "19:narrow@thread.tacv2": {allow: [engineering]}\n'
        )
    harness = await _start(sample_dir, monkeypatch, CONFER_TEAMS_LOCAL="true")
    yield harness
    await _stop(harness)


def _trace_action(card: dict[str, Any]) -> dict[str, Any]:
    [action] = [a for a in card["actions"] if a.get("title") == trace_messages.TRACE_LABEL]
    assert action["type"] == "Action.Submit"
    return dict(action["data"])


def _read(call: ConnectorCall) -> str:
    """The card's text as a person reads it (Teams Markdown's escapes taken off)."""
    return "\n".join(call.texts).replace("\\", "")


async def _click(
    teams: TeamsHarness, value: dict[str, Any], *, conversation: str, n: int, user: str = ASKER
) -> ConnectorCall:
    """A click on the card's button, by ``user``; returns what was sent privately."""
    click = teams.connector.message("", activity_id=f"trace-{n}", mention=False, value=value)
    click["conversation"]["id"] = conversation
    click["from"] = {"id": user, "name": "Grace" if user == CLICKER else "Ada"}
    before = len(teams.connector.ok("send"))
    assert await teams.post(click) == 202
    await teams.connector.wait_for(lambda: len(teams.connector.ok("send")) == before + 1)
    return teams.connector.ok("send")[-1]


def _chat_with(teams: TeamsHarness, user: str) -> str:
    """The one-to-one chat Confer created with ``user``."""
    [created] = [c for c in teams.connector.ok("create_conversation") if c.body["members"][0]["id"] == user]
    return created.created_id


async def test_how_i_found_this_is_sent_only_to_the_asker_and_names_what_was_searched(
    teams: TeamsHarness,
) -> None:
    question = "How do the engineering and security policies differ on production access?"
    assert await teams.post(teams.connector.message(question)) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    replies_before = len(teams.connector.ok("reply"))
    conversation = f"{CHANNEL};messageid=question-1"
    # Someone else clicks: a private message, in a one-to-one chat with them, that only the asker
    # can open it; nothing of the trace.
    refused = await _click(teams, _trace_action(card), conversation=conversation, n=1, user=CLICKER)
    assert refused.conversation_id == _chat_with(teams, CLICKER)
    assert refused.card is None and refused.body["text"] == trace_messages.TRACE_ASKER_ONLY
    # The asker clicks: the trace, as a card, in a one-to-one chat with them.
    sent = await _click(teams, _trace_action(card), conversation=conversation, n=2)
    assert sent.conversation_id == _chat_with(teams, ASKER)
    assert len(teams.connector.ok("reply")) == replies_before  # nothing new in the channel
    assert sent.card is not None
    text = _read(sent)
    assert trace_messages.TRACE_TITLE in text
    for title in ("Engineering handbook", "Security policy"):
        assert re.search(rf"• {title}: \"[^\"]+\": \d+ sources? in [\d.]+ s", text), text
    assert re.search(r"◦ 1\. .+ \(p_[0-9a-f]{20}\): (word [\d.]+, meaning [\d.]+, )?fused [\d.]+", text), text
    assert trace_messages.TRACE_NO_MODEL in text
    # The sentences the answer passed over, each with its text and the rule that left it out.
    why = "|".join(re.escape(words) for words in trace_messages.TRACE_DROP_REASONS.values())
    assert re.search(rf'^• Dropped: "[^"]+": (?:{why})$', text, re.MULTILINE), text


async def test_a_channel_that_may_not_search_people_never_sees_its_passages_in_a_trace(
    teams: TeamsHarness,
) -> None:
    assert await teams.post(teams.connector.message("How long is parental leave?")) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    value = _trace_action(card)
    wide = _read(await _click(teams, value, conversation=f"{CHANNEL};messageid=q", n=1))
    people_ids = set(re.findall(r"p_[0-9a-f]{20}", wide))
    assert "People policies" in wide and people_ids
    narrow = _read(await _click(teams, value, conversation="19:narrow@thread.tacv2", n=2))
    assert "People policies" not in narrow and "20 weeks" not in narrow
    assert not people_ids & set(re.findall(r"p_[0-9a-f]{20}", narrow))
