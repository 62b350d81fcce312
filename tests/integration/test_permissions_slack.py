"""Permissions carried from the sources, end to end in Slack (docs/connectors.md#permissions).

A Confluence page restricted to the HR group and a SharePoint file readable by the HR group are
indexed through the connectors (tests/integration/handbook.py: ``confer index`` against the fake
Confluence and Graph), into the embedded index or the fake Elasticsearch cluster. Then, through
the real server and the fake Slack API (``users.info`` names people by email,
``conversations.members`` lists channels):

- someone outside the group never gets those passages: not in the answer, its sources, the
  "How I found this" trace, nor the suggested follow-ups; nor does someone Slack cannot name;
- someone in the group gets them in a direct message;
- in a channel, the answer is made only of what everyone in it may read: with someone outside the
  group there, not from them, and the asker alone is told privately to ask in a direct message;
  with only the group there, from them.
"""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from bot import messages
from bot.server import build_server
from bot.settings import load_settings
from bot.wiring import build_backend
from tests.fakes.backends import FaultyBackend
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack
from tests.integration.conftest import SIGNING_SECRET, Harness
from tests.integration.handbook import BONUS, FILE_SECRETS, PAGE_SECRETS, SALARY
from tests.integration.handbook import handbook as handbook
from tests.integration.handbook import hr_graph as hr_graph
from tests.integration.handbook import hr_wiki as hr_wiki
from tests.integration.test_slack_feedback import _answer_ts
from tests.integration.test_slack_trace import _shown, _trace_button

ANA, BO, CY, NEMO = "U0ANA", "U0BO", "U0CY", "U0NEMO"  # in HR, in HR, not in HR, no email


@pytest.fixture
async def harness(handbook: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    fake = await FakeSlackApi().start()
    fake.person(ANA, "Ana@example.com")
    fake.person(BO, "bo@example.com")
    fake.person(CY, "cy@example.com")
    fake.person(NEMO, None)  # a token without users:read.email, or a profile without one
    fake.person("U0BOT", None, bot=True)
    fake.join("C0MIXED", ANA, CY, "U0BOT")
    fake.join("C0HR", ANA, BO, "U0BOT")
    for name, value in (
        ("SLACK_BOT_TOKEN", "xoxb-test-token"),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        ("SLACK_API_URL", fake.url),
        ("CONFER_SLACK_PROGRESS", "edit"),
        ("CONFER_SHUTDOWN_GRACE_SECONDS", "5"),
    ):
        monkeypatch.setenv(name, value)
    settings = load_settings(env_file=None)
    backend = FaultyBackend(build_backend(settings))
    server = build_server(settings, status_interval=0.2, backend=backend, host="127.0.0.1")
    server.port = 0
    await server.start()
    async with ClientSession() as http:
        slack = SignedSlack(
            url=f"http://127.0.0.1:{server.port}/slack/events", secret=SIGNING_SECRET, session=http
        )
        yield Harness(server=server, fake=fake, slack=slack, backend=backend, http=http)
        await server.stop()
    await fake.stop()


async def _in_dm(harness: Harness, user: str, question: str) -> dict[str, Any]:
    before = len(harness.fake.answers())
    await harness.slack.message(question, channel=f"D{user}", channel_type="im", user=user)
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == before + 1)
    return harness.fake.answers()[-1]


async def _in_channel(harness: Harness, user: str, channel: str, question: str, ts: str) -> dict[str, Any]:
    before = len(harness.fake.answers())
    await harness.slack.mention(question, channel=channel, user=user, ts=ts)
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == before + 1)
    return harness.fake.answers()[-1]


async def _trace(harness: Harness, answer: dict[str, Any], user: str, thread_ts: str = "") -> str:
    before = len(harness.fake.ephemerals())
    status, _ = await harness.slack.act(
        _trace_button(answer),
        channel=str(answer["channel"]),
        user=user,
        thread_ts=thread_ts,
        message_ts=_answer_ts(harness, answer),
    )
    assert status == 200

    def traces() -> list[dict[str, Any]]:  # (a private note may come in between: it has no blocks)
        return [e for e in harness.fake.ephemerals()[before:] if e.get("blocks")]

    await harness.fake.wait_for(lambda: bool(traces()))
    return _shown(traces()[0])


def _everything_sent(harness: Harness, channel: str) -> str:
    """Every message, edit and private message Confer sent to ``channel``, buttons included (the
    suggested follow-ups are buttons whose value is their question)."""
    sent = [
        c.params
        for c in harness.fake.calls
        if c.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")
        and c.params.get("channel") == channel
    ]
    return json.dumps(sent, ensure_ascii=False)


def _suggestions(answer: dict[str, Any]) -> list[str]:
    return [
        element["value"]
        for block in answer["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if str(element.get("action_id", "")).startswith("suggest_")
    ]


async def test_someone_outside_the_group_never_gets_its_passages(harness: Harness) -> None:
    answer = await _in_dm(harness, CY, SALARY)
    assert "Salaries are reviewed every March" in answer["text"]  # what they may read is answered
    trace = await _trace(harness, answer, CY)
    assert "Pay" in trace and "handbook" in trace.lower()  # the trace is there, with its hits
    await _trace(harness, await _in_dm(harness, CY, BONUS), CY)
    sent = _everything_sent(harness, f"D{CY}")
    for secret in (*PAGE_SECRETS, *FILE_SECRETS):
        assert secret not in sent, secret  # answers, sources, traces, suggestions, every edit


async def test_someone_slack_cannot_name_reads_only_what_everyone_may(harness: Harness) -> None:
    answer = await _in_dm(harness, NEMO, SALARY)
    assert answer["channel"] == f"D{NEMO}"
    sent = _everything_sent(harness, f"D{NEMO}")
    for secret in (*PAGE_SECRETS, "Salaries are reviewed"):  # not even the staff's page
        assert secret not in sent, secret


async def test_someone_in_the_group_gets_them_in_a_direct_message(harness: Harness) -> None:
    answer = await _in_dm(harness, ANA, SALARY)
    assert "88,000" in answer["text"] and "Salary bands" in json.dumps(answer)  # answered, and cited
    assert any("Marta Quill" in s for s in _suggestions(answer))
    assert "Salary bands" in await _trace(harness, answer, ANA)
    answer = await _in_dm(harness, ANA, BONUS)
    assert "12 percent" in answer["text"] and "bonus.md" in json.dumps(answer)


async def test_a_channel_answer_is_made_of_what_everyone_there_may_read(harness: Harness) -> None:
    # Someone outside the group is in the channel: the group's passages are left out for everyone
    # there, and only the asker is told, privately, that a direct message would search them.
    answer = await _in_channel(harness, ANA, "C0MIXED", SALARY, ts="1700000010.000100")
    assert "Salaries are reviewed every March" in answer["text"]
    shown = await _trace(harness, answer, ANA, thread_ts="1700000010.000100")
    assert "Pay" in shown
    await harness.fake.wait_for(
        lambda: any(e.get("text") == messages.RESTRICTED_ELSEWHERE for e in harness.fake.ephemerals())
    )
    [told] = [e for e in harness.fake.ephemerals() if e.get("text") == messages.RESTRICTED_ELSEWHERE]
    assert (told["channel"], told["user"], told["thread_ts"]) == ("C0MIXED", ANA, "1700000010.000100")
    sent = _everything_sent(harness, "C0MIXED")
    for secret in PAGE_SECRETS:
        assert secret not in sent, secret  # the answer, its sources, suggestions, the trace, the note
    # Only the group is in the channel: the answer is made of the group's passages.
    answer = await _in_channel(harness, ANA, "C0HR", SALARY, ts="1700000011.000100")
    assert "88,000" in answer["text"] and "Salary bands" in json.dumps(answer)
