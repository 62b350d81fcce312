"""Finding the id to put under ``channels:``: when a place is refused, ``confer serve`` logs its id
as the collections file spells it (a Slack channel id, a Teams conversation id without the reply
chain), at INFO, the service's default level."""

import logging
from pathlib import Path

import pytest

from retrieval.collections import ChannelPolicy
from tests.integration.conftest import Harness
from tests.integration.test_teams import TeamsHarness, _start, _stop

REFUSED = "refused: this place is not in the channels section"


def _refused_places(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (getattr(r, "surface", ""), getattr(r, "place", ""))
        for r in caplog.records
        if r.getMessage() == REFUSED and r.levelno == logging.INFO
    ]


async def test_a_slack_channel_outside_the_channels_section_is_logged_by_its_id(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    service = harness.server.service
    service.config = service.config.model_copy(
        update={"channels": {"C0001": ChannelPolicy(allow=("people",))}}
    )
    caplog.set_level(logging.INFO, logger="bot.chat.intake")
    await harness.slack.command("how long is parental leave?", channel="C0NEWTEAM")
    await harness.slack.command("list", channel="G0PRIVATE")
    await harness.slack.command("how long is parental leave?", channel="C0001")  # allowed: not logged
    assert _refused_places(caplog) == [("command", "C0NEWTEAM"), ("command", "G0PRIVATE")]
    assert all("parental" not in r.getMessage() for r in caplog.records)  # the id, never the question


async def test_a_teams_channel_is_logged_by_the_id_the_channels_section_takes(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    teams: TeamsHarness = await _start(sample_dir, monkeypatch, CONFER_TEAMS_LOCAL="true")
    try:
        service = teams.server.service
        policy = ChannelPolicy(allow=("people",))
        service.config = service.config.model_copy(update={"channels": {"19:other@thread.tacv2": policy}})
        caplog.set_level(logging.INFO, logger="bot.chat.intake")
        await teams.post(teams.connector.message("how long is parental leave?"))
        await teams.connector.wait_for(lambda: bool(_refused_places(caplog)))
        # the reply chain's ";messageid=…" is not part of the id
        assert _refused_places(caplog) == [("teams", "19:channel-1@thread.tacv2")]
    finally:
        await _stop(teams)
