"""The Slack fault matrix: every Web API call Confer makes while answering, under every fault, one
question per cell, all cells at once against two real ``confer serve`` stacks (the streamed path
and the edit path; direct messages go through the streamed server, which answers them by post and
edit). Each cell has a channel and a workspace of its own, so its faults, its rate budgets and what
it shows touch no other cell. ``verdict`` says what is wrong with what the person saw."""

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from aiohttp import ClientSession

from bot import messages
from bot.server import ConferServer, build_server
from bot.settings import load_settings
from tests.fakes.backends import FaultyBackend
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack

Route = Literal["stream", "edit", "dm"]
SIGNING_SECRET = "matrix-signing-secret-0123456789"
QUESTION = "in:people how long is parental leave?"
NEEDLE = "20 weeks"  # in every answer to QUESTION

# Short deadlines, injected through settings: no cell waits on real Slack time-outs.
QUESTION_TIMEOUT = 10.0  # CONFER_QUESTION_TIMEOUT_SECONDS
DELIVERY = 2.0  # CONFER_DELIVERY_SECONDS
CALL_TIMEOUT = 1  # CONFER_SLACK_TIMEOUT_SECONDS
RETRY_AFTER = 0.2  # what a 429 asks for (Slack says whole seconds; a fraction keeps cells fast)
# The stated bound: the answer, or one clear failure message, shows within the question's time-out
# plus the delivery time plus the calls that may be on their way when the deadline comes (a final
# append, the stream's stop, the answer's post, the read that looks for it, a status edit), each
# at most one call's time-out.
BOUND = QUESTION_TIMEOUT + DELIVERY + 5 * CALL_TIMEOUT

# What each route's question calls, in the order a person meets them.
METHODS: dict[Route, tuple[str, ...]] = {
    "stream": ("assistant.threads.setStatus", "chat.startStream", "chat.appendStream", "chat.stopStream"),
    "edit": ("chat.postMessage", "chat.update", "conversations.replies"),
    "dm": ("chat.postMessage", "chat.update", "conversations.history"),
}
# A documented ``ok: false`` error per method (https://docs.slack.dev/reference/methods/<method>).
ERRORS = {
    "assistant.threads.setStatus": "invalid_arguments",
    "chat.startStream": "not_in_channel",
    "chat.appendStream": "message_not_in_streaming_state",
    "chat.stopStream": "message_not_in_streaming_state",
    "chat.postMessage": "not_in_channel",
    "chat.update": "cant_update_message",
    "conversations.replies": "thread_not_found",
    "conversations.history": "channel_not_found",
}
FAULTS = (
    "429-once",
    "429-throughout",
    "5xx-once",
    "5xx-throughout",
    "dropped-before-applied",
    "dropped-after-applied",
    "slower-than-its-time-out",
    "documented-error",
)
# The reads happen only when the answer's post may have been lost: that is set up first.
LOOKS = frozenset({"conversations.replies", "conversations.history"})


def fault_script(method: str, fault: str) -> dict[str, Any]:
    """``FakeSlackApi.script`` arguments for ``fault`` on ``method``."""
    scripts: dict[str, dict[str, Any]] = {
        "429-once": {"status": 429, "retry_after": RETRY_AFTER},
        "429-throughout": {"status": 429, "retry_after": RETRY_AFTER, "always": True},
        "5xx-once": {"status": 503},
        "5xx-throughout": {"status": 503, "always": True},
        "dropped-before-applied": {"drop": "before"},
        "dropped-after-applied": {"drop": "after"},
        "slower-than-its-time-out": {"late": CALL_TIMEOUT + 0.5},
        "documented-error": {"error": ERRORS[method], "always": True},
    }
    return scripts[fault]


@dataclass(frozen=True)
class Cell:
    route: Route
    method: str
    fault: str
    n: int

    @property
    def id(self) -> str:
        return f"{self.route}:{self.method}:{self.fault}"

    @property
    def channel(self) -> str:
        return f"{'D' if self.route == 'dm' else 'C'}M{self.n:04d}"

    @property
    def team(self) -> str:
        return f"TM{self.n:04d}"

    @property
    def thread(self) -> str:
        """The asker's message: older than anything the fake posts after it (``1700000000.…``), as
        in Slack, where a thread's replies always come after it. (A thread ts newer than the replies
        hid the answer from a read ``oldest`` the thread, when the status's post had been lost.)"""
        return f"1699990{self.n:03d}.000001"


def cells() -> list[Cell]:
    every = [(r, m, f) for r, methods in METHODS.items() for m in methods for f in FAULTS]
    return [Cell(r, m, f, n) for n, (r, m, f) in enumerate(every)]


@dataclass
class Seen:
    """What the person who asked saw in the cell's channel."""

    answers: int
    failures: list[str]
    final_status: str
    open_streams: int  # streams Confer never asked Slack to stop (one it could not stop, Slack ends)
    outcome_after: float | None  # seconds from the question to its answer or failure message
    status_posts: int = 0  # status messages posted (a stream is not one)
    # "My answer may not have been posted: if you do not see it above, …" said where there was no
    # status to say it (true either way, like the status's own words)
    told_uncertain: bool = False


@dataclass
class Run:
    fakes: dict[str, FakeSlackApi]
    asked: dict[str, float] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)


def _answer_text(params: dict[str, Any]) -> bool:
    return bool(params.get("blocks")) and NEEDLE in str(params.get("text", ""))


def look(fake: FakeSlackApi, cell: Cell, asked: float) -> Seen:
    """The cell's channel as its asker sees it: answers (a finished stream showing it, a posted
    answer), failure messages (private or in the status), the status's last words, open streams."""
    streams = [s for s in fake.streams.values() if s.channel == cell.channel]
    posts = [c for c in fake.ok_calls("chat.postMessage") if c.params.get("channel") == cell.channel]
    shown = [s.stopped_at for s in streams if s.stopped and NEEDLE in s.text]
    shown += [c.at for c in posts if _answer_text(c.params)]
    failed: list[tuple[float, str]] = [
        (c.at, str(c.params["text"]))
        for c in fake.ok_calls("chat.postEphemeral")
        if c.params.get("channel") == cell.channel and c.params.get("text") == messages.NOT_POSTED
    ]
    said = (messages.UNEXPECTED, messages.TIMED_OUT, messages.INTERRUPTED)
    failed += [(c.at, str(c.params["text"])) for c in posts if c.params.get("text") in said]
    statuses: list[tuple[float, str]] = [
        (at, chunk["title"])
        for s in streams
        for chunk, at in zip(s.chunks, s.chunk_at, strict=True)
        if chunk["type"] == "plan_update"
    ]
    status_ts = {str(c.response.get("ts")) for c in posts if str(c.params.get("text", "")).startswith("🔎")}
    statuses += [
        (c.at, str(c.params.get("text", ""))) for c in posts if str(c.response.get("ts")) in status_ts
    ]
    statuses += [
        (c.at, str(c.params.get("text", "")))
        for c in fake.ok_calls("chat.update")
        if c.params.get("channel") == cell.channel and str(c.params.get("ts")) in status_ts
    ]
    final = max(statuses)[1] if statuses else ""
    stop_asked = {str(c.params.get("ts")) for c in fake.calls if c.method == "chat.stopStream"}
    if final == messages.STATUS_POST_FAILED:
        failed.append((max(statuses)[0], final))
    moments = [at for at in shown] + [at for at, _ in failed]
    return Seen(
        answers=len(shown),
        failures=[text for _, text in failed],
        final_status=final,
        open_streams=sum(1 for s in streams if not s.stopped and s.ts not in stop_asked),
        outcome_after=min(moments) - asked if moments else None,
        status_posts=len(status_ts),
        told_uncertain=any(c.params.get("text") == messages.POST_UNCERTAIN for c in posts),
    )


def told_uncertain(seen: Seen) -> bool:
    """Whether the asker was told the answer may not have been posted (by the status, or said where
    there was no status)."""
    return seen.final_status == messages.STATUS_POST_UNCERTAIN or seen.told_uncertain


def verdict(seen: Seen, bound: float = BOUND) -> list[str]:
    """What is wrong with what the person saw; empty when the cell holds: exactly one answer or
    exactly one clear failure message, within ``bound``, never a duplicate (answer or status
    message), never silence, never a status that contradicts what was delivered, no stream left
    open."""
    problems = []
    if seen.answers > 1:
        problems.append(f"{seen.answers} answers")
    # "The answer may not have been posted: if it is not below, ask again" is true either way.
    uncertain = told_uncertain(seen)
    if seen.answers == 0 and not seen.failures and not uncertain:
        problems.append("silence: no answer and no failure message")
    if len(seen.failures) > 1:
        problems.append(f"{len(seen.failures)} failure messages: {seen.failures}")
    if seen.answers and seen.failures:
        problems.append(f"an answer and a failure message: {seen.failures}")
    if seen.answers == 0 and seen.final_status.startswith("✅"):
        problems.append(f"the status says done without an answer: {seen.final_status!r}")
    if seen.status_posts > 1:
        problems.append(f"{seen.status_posts} status messages")
    if seen.open_streams:
        problems.append(f"{seen.open_streams} stream(s) left open")
    if seen.outcome_after is not None and seen.outcome_after > bound:
        problems.append(f"shown after {seen.outcome_after:.1f} s (bound {bound:.0f} s)")
    return problems


@contextlib.contextmanager
def matrix_environment(kb: Path, **extra: str) -> Iterator[None]:
    """The settings both servers share (short deadlines), the rest of the environment cleared."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(("CONFER_", "SLACK_", "LLM_", "ELASTICSEARCH_", "CONNECTIONS__")) or name in (
                "REDIS_URL",
                "DATABASE_URL",
                "PORT",
            ):
                patch.delenv(name)
        settings = {
            "CONFER_EMBEDDINGS": "off",
            # Every cell asks the same question: with the answer cache on, whether a cell is
            # researched (a status message, then the answer) or answered from the cache (no status)
            # would depend on whether another cell had finished first, i.e. on timing. Cells touch
            # no other cell; the cached path under a lost post is test_slack_hardening's.
            "CONFER_CACHE": "off",
            "SLACK_BOT_TOKEN": "xoxb-matrix",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "CONFER_COLLECTIONS": str(kb / "collections.yaml"),
            "CONFER_DATA_DIR": str(kb / ".confer"),
            "CONFER_SHUTDOWN_GRACE_SECONDS": "1",
            "CONFER_MAX_CONCURRENT_QUESTIONS": "128",
            "CONFER_QUESTION_TIMEOUT_SECONDS": str(QUESTION_TIMEOUT),
            "CONFER_DELIVERY_SECONDS": str(DELIVERY),
            "CONFER_SLACK_TIMEOUT_SECONDS": str(CALL_TIMEOUT),
            **extra,
        }
        for name, value in settings.items():
            patch.setenv(name, value)
        yield


@contextlib.asynccontextmanager
async def serving(progress: str, backend: FaultyBackend) -> AsyncIterator[tuple[ConferServer, FakeSlackApi]]:
    fake = await FakeSlackApi().start()
    os.environ["SLACK_API_URL"] = fake.url
    os.environ["CONFER_SLACK_PROGRESS"] = progress
    server = build_server(
        load_settings(env_file=None), status_interval=0.2, backend=backend, host="127.0.0.1"
    )
    server.port = 0
    await server.start()
    try:
        yield server, fake
    finally:
        if not server._stopping:
            await server.stop()
        await fake.stop()


def _as_team(body: str, team: str) -> str:
    """An event body from ``SignedSlack`` as sent from workspace ``team``."""
    event = json.loads(body)
    event["team_id"] = team
    event["event"]["team"] = team
    for authorization in event["authorizations"]:
        authorization["team_id"] = team
    return json.dumps(event)


async def ask(slack: SignedSlack, cell: Cell) -> None:
    if cell.route == "dm":
        body = slack.message_body(QUESTION, channel=cell.channel, channel_type="im")
    else:
        body = slack.mention_body(QUESTION, channel=cell.channel, ts=cell.thread)
    status, _ = await slack.send(_as_team(body, cell.team), "application/json")
    assert status == 200


def inject(fake: FakeSlackApi, cell: Cell) -> None:
    if cell.method in LOOKS:  # the answer's post reached Slack and its reply was lost
        fake.script("chat.postMessage", drop="after", channel=cell.channel, when=_answer_text)
    fake.script(cell.method, channel=cell.channel, **fault_script(cell.method, cell.fault))


async def run_matrix(kb: Path, backend: FaultyBackend, chosen: list[Cell], *, cutoff: float) -> Run:
    """Ask every chosen cell's question at once, wait until each shows an answer or a failure
    message and every question has ended (at most ``cutoff`` seconds in all), then look."""
    async with (
        serving("stream", backend) as (streamed, stream_fake),
        serving("edit", backend) as (edited, edit_fake),
        ClientSession() as http,
    ):
        run = Run(fakes={"stream": stream_fake, "dm": stream_fake, "edit": edit_fake})
        servers = {"stream": streamed, "dm": streamed, "edit": edited}
        # One signer per server: its event ids are unique there (a repeated id is a redelivery).
        signers = {
            id(server): SignedSlack(
                url=f"http://127.0.0.1:{server.port}/slack/events", secret=SIGNING_SECRET, session=http
            )
            for server in (streamed, edited)
        }
        signed = {route: signers[id(server)] for route, server in servers.items()}
        for cell in chosen:
            inject(run.fakes[cell.route], cell)

        until = time.monotonic() + cutoff

        async def one(cell: Cell) -> None:
            run.asked[cell.id] = time.monotonic()
            await ask(signed[cell.route], cell)
            fake = run.fakes[cell.route]

            def shown() -> bool:
                seen = look(fake, cell, run.asked[cell.id])
                return bool(seen.answers or seen.failures or told_uncertain(seen))

            with contextlib.suppress(AssertionError):  # silence is the verdict's to report
                await fake.wait_for(shown, within=until - time.monotonic())

        await asyncio.gather(*(one(cell) for cell in chosen))
        for server in (streamed, edited):
            tasks = set(server.scheduler._tasks)
            if tasks and until > time.monotonic():
                await asyncio.wait(tasks, timeout=until - time.monotonic())
        for cell in chosen:
            run.seen[cell.id] = look(run.fakes[cell.route], cell, run.asked[cell.id])
        for fake in (stream_fake, edit_fake):
            fake.heal()  # whatever still retries ends, and the servers stop at once
    return run
