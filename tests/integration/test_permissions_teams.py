"""Permissions carried from the sources, in Teams: the asker is named by their Entra user principal
name from the conversation's roster (the fake connector answers the roster APIs as Teams does), so
a personal chat is answered from what that person may read at the source, and a channel from what
everyone in its roster may read. The handbook (tests/integration/handbook.py) holds a Confluence
page and a SharePoint file only the HR group may read."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import ClientSession

from bot import messages
from bot.server import build_server
from bot.settings import load_settings
from bot.wiring import build_backend
from tests.fakes.bot_connector import ConnectorCall, FakeBotConnector
from tests.integration.handbook import BONUS, FILE_SECRETS, PAGE_SECRETS, SALARY
from tests.integration.handbook import handbook as handbook
from tests.integration.handbook import hr_graph as hr_graph
from tests.integration.handbook import hr_wiki as hr_wiki
from tests.integration.test_teams import TeamsHarness

# People's account ids in Teams, and the names the sources know them by.
ANA, CY = "29:ana", "29:cy"
UPN = {ANA: ("ana@example.com", "ana@example.com"), CY: ("cy.c@example.onmicrosoft.com", "cy@example.com")}
CHANNEL = "19:mixed@thread.tacv2"


@pytest.fixture
async def teams(handbook: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TeamsHarness]:
    connector = await FakeBotConnector().start()
    connector.roster = {
        "a:ana": {ANA: UPN[ANA]},
        "a:cy": {CY: UPN[CY]},
        CHANNEL: {ANA: UPN[ANA], CY: UPN[CY]},
    }
    monkeypatch.setenv("CONFER_TEAMS_LOCAL", "true")
    monkeypatch.setenv("CONFER_SHUTDOWN_GRACE_SECONDS", "5")
    settings = load_settings(env_file=None)
    server = build_server(settings, status_interval=0.2, backend=build_backend(settings))
    server.port = 0
    await server.start()
    async with ClientSession() as http:
        yield TeamsHarness(server=server, connector=connector, backend=None, http=http)  # type: ignore[arg-type]
        await server.stop()
    await connector.stop()


async def _ask(teams: TeamsHarness, user: str, question: str, conversation: str, n: int) -> ConnectorCall:
    personal = conversation.startswith("a:")
    before = len(teams.answers())
    activity = teams.connector.message(
        question,
        activity_id=f"q-{n}",
        conversation_id=conversation if personal else f"{conversation};messageid=q-{n}",
        conversation_type="personal" if personal else "channel",
        mention=not personal,
        user_id=user,
    )
    assert await teams.post(activity) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == before + 1)
    return teams.answers()[-1]


def _sent(teams: TeamsHarness, conversation: str) -> str:
    """Every activity Confer posted or edited in ``conversation``, as people could read them."""
    return json.dumps(
        [c.body for c in teams.connector.ok() if c.conversation_id.split(";")[0] == conversation],
        ensure_ascii=False,
    )


async def test_a_personal_chat_is_answered_from_what_its_user_principal_name_may_read(
    teams: TeamsHarness,
) -> None:
    inside = await _ask(teams, ANA, SALARY, "a:ana", 1)
    assert "88,000" in " ".join(inside.texts)
    assert "12 percent" in " ".join((await _ask(teams, ANA, BONUS, "a:ana", 2)).texts)
    await _ask(teams, CY, SALARY, "a:cy", 3)
    await _ask(teams, CY, BONUS, "a:cy", 4)
    for secret in (*PAGE_SECRETS, *FILE_SECRETS):
        assert secret not in _sent(teams, "a:cy"), secret
    # Each asker was named through the roster of their own chat, by their user principal name.
    assert {"/v3/conversations/a:ana/members/29:ana", "/v3/conversations/a:cy/members/29:cy"} <= set(
        teams.connector.lookups
    )


async def test_a_channel_is_answered_from_what_everyone_in_its_roster_may_read(teams: TeamsHarness) -> None:
    answer = await _ask(teams, ANA, SALARY, CHANNEL, 5)
    assert "Salaries are reviewed every March" in " ".join(answer.texts)
    await teams.connector.wait_for(
        lambda: any(messages.RESTRICTED_ELSEWHERE in json.dumps(c.body) for c in teams.connector.ok("send"))
    )
    for secret in PAGE_SECRETS:
        assert secret not in _sent(teams, CHANNEL), secret
    # The note went to the asker alone, in a one-to-one chat.
    [created] = [c for c in teams.connector.ok("create_conversation")]
    assert [m["id"] for m in created.body["members"]] == [ANA]
