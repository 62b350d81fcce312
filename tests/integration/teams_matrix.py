"""The Teams fault matrix: each connector call a question makes (the status card's reply and its
updates, the answer's reply) under every fault, one question per cell, all at once against one real
``confer serve`` in Teams local mode and the fake Bot Framework connector. Each cell has a channel
and a person of its own (its budget is the channel's; a private message goes to its person only).
What the person saw is judged by ``slack_matrix.verdict``."""

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession

from bot import messages
from bot.server import ConferServer, build_server
from bot.settings import load_settings
from tests.fakes.backends import FaultyBackend
from tests.fakes.bot_connector import ConnectorCall, FakeBotConnector
from tests.integration.slack_matrix import (
    DELIVERY,
    FAULTS,
    NEEDLE,
    QUESTION,
    QUESTION_TIMEOUT,
    RETRY_AFTER,
    Seen,
    told_uncertain,
)

CALL_TIMEOUT = 1.0  # CONFER_TEAMS_TIMEOUT_SECONDS
BOUND = QUESTION_TIMEOUT + DELIVERY + 5 * CALL_TIMEOUT
METHODS = ("reply", "update")
# 403 is what Teams answers a bot no longer in the conversation (BotNotInConversationRoster);
# 502 a service error it asks to be retried (both in the status-codes table the fake cites).
DOCUMENTED_ERROR = 403
SERVER_ERROR = 502


@dataclass(frozen=True)
class TeamsCell:
    method: str
    fault: str
    n: int

    @property
    def id(self) -> str:
        return f"teams:{self.method}:{self.fault}"

    @property
    def channel(self) -> str:
        return f"19:matrix-{self.n}@thread.tacv2"

    @property
    def question(self) -> str:
        return f"question-{self.n}"

    @property
    def user(self) -> str:
        return f"29:user-{self.n}"


def teams_cells() -> list[TeamsCell]:
    every = [(m, f) for m in METHODS for f in FAULTS]
    return [TeamsCell(m, f, n) for n, (m, f) in enumerate(every)]


def fault_script(fault: str) -> dict[str, Any]:
    scripts: dict[str, dict[str, Any]] = {
        "429-once": {"status": 429, "retry_after": RETRY_AFTER},
        "429-throughout": {"status": 429, "retry_after": RETRY_AFTER, "always": True},
        "5xx-once": {"status": SERVER_ERROR},
        "5xx-throughout": {"status": SERVER_ERROR, "always": True},
        "dropped-before-applied": {"drop": "before"},
        "dropped-after-applied": {"drop": "after"},
        "slower-than-its-time-out": {"late": CALL_TIMEOUT + 0.5},
        "documented-error": {"status": DOCUMENTED_ERROR, "always": True},
    }
    return scripts[fault]


def _is_answer(call: ConnectorCall) -> bool:
    return call.card is not None and "actions" in call.card and NEEDLE in " ".join(call.texts)


def look(connector: FakeBotConnector, cell: TeamsCell, asked: float) -> Seen:
    """The cell's reply chain and its person's private chat, as that person sees them."""
    mine = [c for c in connector.ok() if c.conversation_id.split(";", 1)[0] == cell.channel]
    replies = [c for c in mine if c.method == "reply"]
    answers = [c for c in replies if _is_answer(c)]
    statuses = [c for c in replies if c.card is not None and not _is_answer(c)]
    status_ids = {c.created_id for c in statuses}
    versions = [(c.at, " ".join(c.texts)) for c in statuses]
    versions += [
        (c.at, " ".join(c.texts)) for c in mine if c.method == "update" and c.activity_id in status_ids
    ]
    final = max(versions)[1] if versions else ""
    failed = [
        (c.at, str(c.body.get("text")))
        for c in replies
        if c.body.get("text") in (messages.UNEXPECTED, messages.TIMED_OUT)
    ]
    failed += [
        (c.at, str(c.body.get("text")))
        for c in connector.ok("send")
        if c.conversation_id == f"a:private-{cell.user}" and c.body.get("text") == messages.NOT_POSTED
    ]
    if messages.STATUS_POST_FAILED in final:
        failed.append((max(versions)[0], messages.STATUS_POST_FAILED))
    uncertain = messages.STATUS_POST_UNCERTAIN in final
    moments = [c.at for c in answers] + [at for at, _ in failed]
    return Seen(
        answers=len(answers),
        failures=[text for _, text in failed],
        final_status=messages.STATUS_POST_UNCERTAIN if uncertain else final,
        open_streams=0,
        outcome_after=min(moments) - asked if moments else None,
        status_posts=len(statuses),
        told_uncertain=any(c.body.get("text") == messages.POST_UNCERTAIN for c in replies),
    )


@dataclass
class TeamsRun:
    connector: FakeBotConnector
    asked: dict[str, float] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def serving(backend: FaultyBackend) -> AsyncIterator[tuple[ConferServer, FakeBotConnector]]:
    connector = await FakeBotConnector().start()
    os.environ["CONFER_TEAMS_LOCAL"] = "true"
    os.environ["CONFER_TEAMS_TIMEOUT_SECONDS"] = str(CALL_TIMEOUT)
    for slack in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"):
        os.environ.pop(slack, None)
    try:
        settings = load_settings(env_file=None)
        server = build_server(settings, status_interval=0.2, backend=backend, host="127.0.0.1")
        server.port = 0
        await server.start()
        try:
            yield server, connector
        finally:
            if not server._stopping:
                await server.stop()
    finally:
        await connector.stop()


async def run_teams_matrix(backend: FaultyBackend, chosen: list[TeamsCell], *, cutoff: float) -> TeamsRun:
    async with serving(backend) as (server, connector), ClientSession() as http:
        run = TeamsRun(connector=connector)
        for cell in chosen:
            connector.script(cell.method, conversation=cell.channel, **fault_script(cell.fault))  # type: ignore[arg-type]
        until = time.monotonic() + cutoff
        url = f"http://127.0.0.1:{server.port}/api/messages"

        async def one(cell: TeamsCell) -> None:
            activity = connector.message(
                QUESTION,
                activity_id=cell.question,
                conversation_id=f"{cell.channel};messageid={cell.question}",
            )
            activity["from"]["id"] = cell.user
            run.asked[cell.id] = time.monotonic()
            async with http.post(
                url, data=json.dumps(activity), headers={"Content-Type": "application/json"}
            ) as sent:
                assert sent.status in (200, 201, 202), sent.status

            def shown() -> bool:
                seen = look(connector, cell, run.asked[cell.id])
                return bool(seen.answers or seen.failures or told_uncertain(seen))

            with contextlib.suppress(AssertionError):
                await connector.wait_for(shown, within=max(0.0, until - time.monotonic()))

        await asyncio.gather(*(one(cell) for cell in chosen))
        tasks = set(server.scheduler._tasks)
        if tasks and until > time.monotonic():
            await asyncio.wait(tasks, timeout=until - time.monotonic())
        for cell in chosen:
            run.seen[cell.id] = look(connector, cell, run.asked[cell.id])
        connector.heal()
    return run
