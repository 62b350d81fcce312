""" "How I found this" in Teams, over real HTTP to the fake Bot Framework connector: the button on an
answer card sends its trace, as a card, in a one-to-one chat with the person who clicked (never in
the channel), naming each collection searched with its query and hits; a channel that may not
search a collection never sees its passages."""

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot import messages
from tests.fakes.bot_connector import ConnectorCall
from tests.integration.test_teams import CHANNEL, TeamsHarness, _start, _stop

CLICKER = "29:user-2"


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
    [action] = [a for a in card["actions"] if a.get("title") == messages.TRACE_LABEL]
    assert action["type"] == "Action.Submit"
    return dict(action["data"])


def _read(call: ConnectorCall) -> str:
    """The card's text as a person reads it (Teams Markdown's escapes taken off)."""
    return "\n".join(call.texts).replace("\\", "")


async def _click(teams: TeamsHarness, value: dict[str, Any], *, conversation: str, n: int) -> ConnectorCall:
    """A click on the card's button, by ``CLICKER``; returns the trace card sent privately."""
    click = teams.connector.message("", activity_id=f"trace-{n}", mention=False, value=value)
    click["conversation"]["id"] = conversation
    click["from"] = {"id": CLICKER, "name": "Grace"}
    before = len(teams.connector.ok("send"))
    assert await teams.post(click) == 202
    await teams.connector.wait_for(lambda: len(teams.connector.ok("send")) == before + 1)
    return teams.connector.ok("send")[-1]


async def test_how_i_found_this_is_sent_only_to_the_clicker_and_names_what_was_searched(
    teams: TeamsHarness,
) -> None:
    question = "How do the engineering and security policies differ on production access?"
    assert await teams.post(teams.connector.message(question)) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    replies_before = len(teams.connector.ok("reply"))
    sent = await _click(teams, _trace_action(card), conversation=f"{CHANNEL};messageid=question-1", n=1)
    # A one-to-one chat with the person who clicked, created for it; nothing new in the channel.
    [created] = [
        c for c in teams.connector.ok("create_conversation") if c.body["members"][0]["id"] == CLICKER
    ]
    assert sent.conversation_id == created.created_id
    assert len(teams.connector.ok("reply")) == replies_before
    assert sent.card is not None
    text = _read(sent)
    assert messages.TRACE_TITLE in text
    for title in ("Engineering handbook", "Security policy"):
        assert re.search(rf"• {title}: \"[^\"]+\": \d+ sources? in [\d.]+ s", text), text
    assert re.search(r"◦ 1\. .+ \(p_[0-9a-f]{20}\): (word [\d.]+, meaning [\d.]+, )?fused [\d.]+", text), text
    assert messages.TRACE_NO_MODEL in text


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
