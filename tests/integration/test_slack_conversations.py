"""Conversations on Slack through the real server and the fake Slack API: thread replies, mentions
mid-thread, DMs, what is ignored, and memory across restarts and replicas (SQLite, PostgreSQL)."""

import asyncio
import socket
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from bot.chat.memory import ThreadKey
from bot.server import build_server
from bot.settings import load_settings
from tests.fakes.backends import FaultyBackend
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlackApi
from tests.fakes.slack_client import SignedSlack
from tests.fakes.tcp_proxy import TcpProxy
from tests.integration.conftest import SIGNING_SECRET, Harness, index_samples, running_harness

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"

StartServer = Callable[..., Awaitable[Harness]]


def _answer_text(post: dict[str, Any]) -> str:
    return str(post.get("text", ""))


def _statuses(harness: Harness) -> list[str]:
    """The status message's texts, as posted and as edited."""
    return [
        str(c.params.get("text", ""))
        for c in harness.fake.ok_calls("chat.postMessage") + harness.fake.ok_calls("chat.update")
        if not c.params.get("blocks")
    ]


def _sources(post: dict[str, Any]) -> str:
    return " ".join(
        str(element.get("text", ""))
        for block in post.get("blocks", [])
        for element in (block.get("elements") or [block.get("text") or {}])
        if isinstance(element, dict)
    )


async def test_reply_in_an_answered_thread_is_a_followup_with_the_earlier_turn(harness: Harness) -> None:
    await harness.slack.mention("How long is parental leave? in:people", ts="1700000001.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    status, _ = await harness.slack.message(
        "And can it be taken in blocks?", ts="1700000001.000300", thread_ts="1700000001.000100"
    )
    assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    followup = harness.fake.answers()[1]
    assert followup["thread_ts"] == "1700000001.000100"
    assert "three blocks" in _answer_text(followup)
    assert "parental-leave" in _sources(followup)  # cited from the leave policy
    statuses = [
        str(c.params.get("text", ""))
        for c in harness.fake.ok_calls("chat.postMessage") + harness.fake.ok_calls("chat.update")
        if not c.params.get("blocks")
    ]
    assert any("Searching: can parental leave be taken in blocks?" in t for t in statuses)


@pytest.mark.parametrize(
    "thanks",
    [
        "thanks!",
        "thank you, that was really helpful!",
        "Yes, Thank you. I do have couple more questions please",
    ],
)
async def test_a_thank_you_in_the_thread_is_welcomed_and_the_next_reply_builds_on_the_question(
    harness: Harness, thanks: str
) -> None:
    await harness.slack.mention("How long is parental leave? in:people", ts="1700000005.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    await harness.slack.message(thanks, ts="1700000005.000200", thread_ts="1700000005.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    welcomed = harness.fake.answers()[1]
    assert welcomed["thread_ts"] == "1700000005.000100"
    assert "welcome" in _answer_text(welcomed) and "parental" not in _answer_text(welcomed).lower()
    await harness.slack.message(
        "And can it be taken in blocks?", ts="1700000005.000300", thread_ts="1700000005.000100"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 3)
    assert "three blocks" in _answer_text(harness.fake.answers()[2])


async def test_a_question_after_a_thank_you_is_answered_not_welcomed(harness: Harness) -> None:
    await harness.slack.mention("thanks, how long is parental leave? in:people", ts="1700000006.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    answer = harness.fake.answers()[0]
    text = _answer_text(answer)
    assert "20 weeks" in text and "found nothing" not in text and "welcome" not in text.lower()
    assert "parental-leave" in _sources(answer)


async def test_a_question_announced_gets_the_usage_and_the_question_after_it_is_answered(
    harness: Harness,
) -> None:
    await harness.slack.mention("hi, I have a question", ts="1700000007.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    usage = _answer_text(harness.fake.answers()[0])
    assert "Ask me a question" in usage and "found nothing" not in usage
    await harness.slack.mention(
        "I have another question: how long is parental leave? in:people", ts="1700000007.000200"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    answer = harness.fake.answers()[1]
    assert "20 weeks" in _answer_text(answer) and "parental-leave" in _sources(answer)


async def test_reply_in_a_thread_confer_never_answered_gets_nothing(harness: Harness) -> None:
    await harness.slack.message(
        "And can it be taken in blocks?", ts="1700000002.000300", thread_ts="1700000002.000100"
    )
    await harness.slack.message("How long is parental leave?", ts="1700000002.000400")  # top level
    await harness.slack.mention("ping")  # a call to wait on: the mention is answered
    await harness.fake.wait_for(lambda: len(harness.fake.posts()) >= 1)
    assert all(p.get("thread_ts") != "1700000002.000100" for p in harness.fake.posts())
    assert not [p for p in harness.fake.posts() if p.get("thread_ts") == "1700000002.000400"]


async def test_mention_mid_thread_reads_what_people_wrote_before_it(harness: Harness) -> None:
    harness.fake.threads[("C0001", "1700000003.000100")] = [
        {
            "type": "message",
            "user": "U0ANNA",
            "text": "How long is parental leave here?",
            "ts": "1700000003.000100",
        },
        {"type": "message", "user": "U0BOB", "text": "no idea, 16 weeks?", "ts": "1700000003.000200"},
        {"type": "message", "bot_id": "BOTHER", "text": "Reminder: standup", "ts": "1700000003.000250"},
        {
            "type": "message",
            "user": "U0ANNA",
            "text": f"<@{BOT_USER_ID}> can it be taken in blocks?",
            "ts": "1700000003.000300",
        },
    ]
    await harness.slack.mention(
        "can it be taken in blocks?", ts="1700000003.000300", thread_ts="1700000003.000100"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [read] = harness.fake.ok_calls("conversations.replies")
    assert read.params["ts"] == "1700000003.000100" and int(read.params["limit"]) <= 50
    answer = harness.fake.answers()[0]
    assert "three blocks" in _answer_text(answer)


BABY = "We are expecting a baby in March, so I am planning my parental leave."


def _baby_thread(harness: Harness, thread_ts: str) -> str:
    """A thread Confer has not answered: a colleague's news, a congratulation, then the mention
    (as ``conversations.replies`` returns it); the mention's ts."""
    mention_ts = thread_ts.removesuffix("100") + "300"
    harness.fake.threads[("C0001", thread_ts)] = [
        {
            "type": "message",
            "user": "U0ANNA",
            "text": BABY,
            "ts": thread_ts,
            "thread_ts": thread_ts,
            "reply_count": 2,
        },
        {
            "type": "message",
            "user": "U0BOB",
            "text": "Congratulations!",
            "ts": thread_ts.removesuffix("100") + "200",
            "thread_ts": thread_ts,
            "parent_user_id": "U0ANNA",
        },
        {
            "type": "message",
            "user": "U0ANNA",
            "text": f"<@{BOT_USER_ID}> how many weeks can I take?",
            "ts": mention_ts,
            "thread_ts": thread_ts,
            "parent_user_id": "U0ANNA",
        },
    ]
    return mention_ts


async def test_a_mention_in_a_thread_reads_the_threads_topic_not_its_last_reply(harness: Harness) -> None:
    """ "@Confer how many weeks can I take?" under "… planning my parental leave." and
    "Congratulations!": parental leave is searched, and answered from its policy."""
    mention_ts = _baby_thread(harness, "1700000007.000100")
    await harness.slack.mention("how many weeks can I take?", ts=mention_ts, thread_ts="1700000007.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    answer = harness.fake.answers()[0]
    assert answer["thread_ts"] == "1700000007.000100"
    assert "20 weeks of fully paid parental leave" in _answer_text(answer)
    assert "parental-leave" in _sources(answer)  # cited from the leave policy
    [read] = harness.fake.ok_calls("conversations.replies")
    assert read.params["ts"] == "1700000007.000100" and read.params["latest"] == mention_ts
    statuses = _statuses(harness)
    assert any("Searching: how many weeks can I take? (parental leave)" in t for t in statuses)
    # The thread is Confer's now: a reply is a follow-up about the same leave.
    await harness.slack.message(
        "and can it be taken in blocks?", ts="1700000007.000400", thread_ts="1700000007.000100"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    followup = harness.fake.answers()[1]
    assert "three blocks" in _answer_text(followup) and "parental-leave" in _sources(followup)
    assert any("Searching: can parental leave be taken in blocks?" in t for t in _statuses(harness))


@pytest.mark.parametrize(
    "failure",
    [
        {"error": "missing_scope"},  # an app installed without channels:history
        {"status": 429, "retry_after": 30},  # not waited out: the question goes on as written
    ],
)
async def test_a_thread_that_cannot_be_read_still_gets_its_question_answered(
    harness: Harness, failure: dict[str, Any]
) -> None:
    mention_ts = _baby_thread(harness, "1700000009.000100")
    harness.fake.script("conversations.replies", **failure)
    await harness.slack.mention("how many weeks can I take?", ts=mention_ts, thread_ts="1700000009.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    answer = harness.fake.answers()[0]
    assert answer["thread_ts"] == "1700000009.000100" and _answer_text(answer)
    assert len([c for c in harness.fake.calls if c.method == "conversations.replies"]) == 1
    statuses = _statuses(harness)
    assert not any("Searching:" in t for t in statuses)  # asked as written


async def test_a_mention_outside_a_thread_reads_nothing_and_is_asked_as_written(harness: Harness) -> None:
    _baby_thread(harness, "1700000010.000100")  # a thread elsewhere in the channel: not this question's
    await harness.slack.mention("how long is parental leave?", ts="1700000010.000900")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    answer = harness.fake.answers()[0]
    assert answer["thread_ts"] == "1700000010.000900"
    assert "20 weeks" in _answer_text(answer) and "parental-leave" in _sources(answer)
    assert [c for c in harness.fake.calls if c.method == "conversations.replies"] == []


async def test_an_elliptical_followup_keeps_the_earlier_question_whole(harness: Harness) -> None:
    """ "And within how many months?" after "Can it be split?" is asked of parental leave's split,
    not merged into "Can within how many months be split?"."""
    await harness.slack.mention("How long is parental leave? in:people", ts="1700000008.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    await harness.slack.message("Can it be split?", ts="1700000008.000200", thread_ts="1700000008.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    await harness.slack.message(
        "And within how many months?", ts="1700000008.000300", thread_ts="1700000008.000100"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 3)
    answer = harness.fake.answers()[2]
    assert "18 months" in _answer_text(answer)
    assert "parental-leave" in _sources(answer)


async def test_a_thread_of_thousands_of_messages_is_read_in_one_bounded_call(harness: Harness) -> None:
    thread = [
        {
            "type": "message",
            "user": "U0ANNA",
            "text": f"message {n} " + "words " * 40,
            "ts": f"1700000004.{n:06d}",
        }
        for n in range(1, 5000)
    ]
    harness.fake.threads[("C0001", "1700000004.000001")] = thread
    await harness.slack.mention(
        "How long is parental leave?", ts="1700000004.999999", thread_ts="1700000004.000001"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert len(harness.fake.ok_calls("conversations.replies")) == 1
    assert "20 weeks" in _answer_text(harness.fake.answers()[0])


async def test_direct_message_is_answered(harness: Harness) -> None:
    await harness.slack.message(
        "How long is parental leave?", channel="D0DM", channel_type="im", ts="1700000005.000100"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    answer = harness.fake.answers()[0]
    assert answer["channel"] == "D0DM" and "20 weeks" in _answer_text(answer)
    await harness.slack.message(
        "And can it be taken in blocks?", channel="D0DM", channel_type="im", ts="1700000005.000300"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    assert "three blocks" in _answer_text(harness.fake.answers()[1])


async def test_own_bot_edited_and_other_messages_get_nothing(harness: Harness) -> None:
    await harness.slack.mention("How long is parental leave?", ts="1700000006.000100")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    before = len(harness.fake.calls)
    thread = {"thread_ts": "1700000006.000100"}
    await harness.slack.message("Parental leave is 20 weeks", user=BOT_USER_ID, **thread)
    await harness.slack.message(
        "Parental leave is 20 weeks", user=None, bot_id="BCONFER", subtype="bot_message", **thread
    )
    await harness.slack.message(
        "And can it be taken in blocks?", user="U0OTHERBOT", bot_id="BOTHER", **thread
    )
    await harness.slack.message("edited", subtype="message_changed", **thread)
    await harness.slack.message("And can it be taken in blocks?", subtype="thread_broadcast", **thread)
    await harness.slack.message("joined", subtype="channel_join", **thread)
    await harness.slack.message(
        f"<@{BOT_USER_ID}> can it be taken in blocks?", **thread
    )  # app_mention answers that
    await harness.slack.message("DM from a bot", channel="D0DM", channel_type="im", bot_id="BOTHER")
    await harness.slack.mention("ping")  # then something that is answered, to wait on
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) >= 2 or len(harness.fake.posts()) >= 4)
    new_posts = [c.params for c in harness.fake.calls[before:] if c.method == "chat.postMessage"]
    assert all(p.get("thread_ts") != "1700000006.000100" for p in new_posts)
    assert all(p.get("channel") != "D0DM" for p in new_posts)


async def test_followups_off_answers_only_mentions(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFER_THREAD_FOLLOWUPS", "off")
    async with _server(sample_dir, monkeypatch) as start:
        one = await start()
        await one.slack.mention("How long is parental leave?", ts="1700000007.000100")
        await one.fake.wait_for(lambda: len(one.fake.answers()) == 1)
        await one.slack.message("And can it be taken in blocks?", thread_ts="1700000007.000100")
        await one.slack.message("How long is parental leave?", channel="D0DM", channel_type="im")
        await one.slack.mention("And can it be taken in blocks?", thread_ts="1700000007.000100")
        await one.fake.wait_for(lambda: len(one.fake.answers()) == 2)
        assert [a["channel"] for a in one.fake.answers()] == ["C0001", "C0001"]
        assert "three blocks" in _answer_text(one.fake.answers()[1])  # a mention still uses memory


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
async def test_restart_between_turns_keeps_the_memory(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, database: str
) -> None:
    if database == "postgresql":
        if not _postgres_answers():
            pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: PostgreSQL memory not tested")
        monkeypatch.setenv("DATABASE_URL", POSTGRES_URL)
    thread = f"1700{uuid.uuid4().int % 10**6:06d}.000100"  # the PostgreSQL database outlives the test
    async with _server(sample_dir, monkeypatch) as start:
        first = await start()
        await first.slack.mention("How long is parental leave? in:people", ts=thread)
        await first.fake.wait_for(lambda: len(first.fake.answers()) == 1)
        await first.server.stop()
        second = await start()  # a restarted `confer serve`, or another replica
        await second.slack.message("And can it be taken in blocks?", thread_ts=thread)
        await second.fake.wait_for(lambda: len(second.fake.answers()) == 1)
        assert "three blocks" in _answer_text(second.fake.answers()[0])


async def test_two_replicas_sharing_postgresql_either_continues(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: replicas not tested")
    monkeypatch.setenv("DATABASE_URL", POSTGRES_URL)
    thread = f"1701{uuid.uuid4().int % 10**6:06d}.000100"
    async with _server(sample_dir, monkeypatch) as start:
        one, two = await start(), await start()
        await one.slack.mention("How long is parental leave?", ts=thread)
        await one.fake.wait_for(lambda: len(one.fake.answers()) == 1)
        await two.slack.message("And can it be taken in blocks?", thread_ts=thread)
        await two.fake.wait_for(lambda: len(two.fake.answers()) == 1)
        assert "three blocks" in _answer_text(two.fake.answers()[0])
        await one.slack.message("Who approves it?", thread_ts=thread)
        await one.fake.wait_for(lambda: len(one.fake.answers()) == 2)


async def test_postgresql_unreachable_at_start_names_database_url(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("DATABASE_URL", f"postgresql://confer:hunter2@127.0.0.1:{port}/confer")
    from bot.settings import SettingsError

    async with _server(sample_dir, monkeypatch) as start:
        with pytest.raises(SettingsError) as caught:
            await start(store_connect_seconds=0.5)  # nothing listens: not the 10 s a server waits
    assert "DATABASE_URL" in str(caught.value.problems) and "hunter2" not in str(caught.value.problems)


class _server:  # noqa: N801 -- used as ``async with _server(...) as start``
    """Starts servers (each with its own fake Slack API) on one data folder and database."""

    def __init__(self, sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self._dir = sample_dir
        self._monkeypatch = monkeypatch
        self._started: list[Harness] = []
        self._cleanups: list[Callable[[], Awaitable[Any]]] = []

    async def __aenter__(self) -> StartServer:
        return self._start

    async def _start(self, *, store_connect_seconds: float | None = None) -> Harness:
        fake = await FakeSlackApi().start()
        self._cleanups.append(fake.stop)
        mp = self._monkeypatch
        mp.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
        mp.setenv(
            "CONFER_SLACK_PROGRESS", "edit"
        )  # answers as messages; the streamed path: test_slack_stream
        mp.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
        mp.setenv("SLACK_API_URL", fake.url)
        mp.setenv("CONFER_COLLECTIONS", str(self._dir / "collections.yaml"))
        mp.setenv("CONFER_DATA_DIR", str(self._dir / ".confer"))
        mp.setenv("CONFER_SHUTDOWN_GRACE_SECONDS", "5")
        backend = FaultyBackend(await index_samples(self._dir))
        server = build_server(
            load_settings(env_file=None), status_interval=0.2, backend=backend, host="127.0.0.1"
        )
        server.port = 0
        if store_connect_seconds is not None:
            server.store_connect_seconds = store_connect_seconds
        try:
            await server.start()
        except BaseException:
            await server.stop()
            raise
        http = ClientSession()
        self._cleanups.append(http.close)
        slack = SignedSlack(
            url=f"http://127.0.0.1:{server.port}/slack/events",
            secret=SIGNING_SECRET,
            session=http,
            response_url=fake.response_url,
        )
        harness = Harness(server=server, fake=fake, slack=slack, backend=backend, http=http)
        self._started.append(harness)
        return harness

    async def __aexit__(self, *exc: object) -> None:
        for harness in reversed(self._started):
            if not harness.server._stopping:
                await harness.server.stop()
        for cleanup in reversed(self._cleanups):
            await cleanup()


async def test_a_reply_under_an_ask_command_is_a_followup(harness: Harness) -> None:
    await harness.slack.command("in:people How long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    root = next(
        c.response["ts"] for c in harness.fake.ok_calls("chat.postMessage") if not c.params.get("thread_ts")
    )
    await harness.slack.message("And can it be taken in blocks?", thread_ts=str(root))
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    followup = harness.fake.answers()[1]
    assert followup["thread_ts"] == root and "three blocks" in _answer_text(followup)


async def test_postgres_down_a_followup_is_answered_without_memory_and_memory_returns_with_it(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL goes away mid-run: a reply in a thread Confer answered is still answered (the
    thread shows Confer's answer), and the reply after the database is back uses memory again at
    once (no reconnection back-off)."""
    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: an outage is not tested")
    proxy = await TcpProxy(5432).start()
    monkeypatch.setenv("DATABASE_URL", f"postgresql://postgres@127.0.0.1:{proxy.port}/test")
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    thread = f"1703{uuid.uuid4().int % 10**6:06d}.000100"  # the database outlives the test
    try:
        async with running_harness(sample_dir, monkeypatch) as harness:
            registry = harness.server.metrics.registry

            def unavailable() -> float:
                labels = {"operation": "read"}
                return registry.get_sample_value("confer_memory_unavailable_total", labels) or 0.0

            await harness.slack.mention("How long is parental leave? in:people", ts=thread)
            await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
            memory, key = harness.server.memory, ThreadKey("slack", TEAM_ID, "C0001", thread)
            assert memory is not None
            for _ in range(200):  # within 10 s, the first turn is remembered with its answer
                if [t for t in await memory.turns(key) if t.answer]:
                    break
                await asyncio.sleep(0.05)
            await proxy.cut()
            await harness.slack.message(
                "How long is parental leave?", ts=thread.replace(".000100", ".000200"), thread_ts=thread
            )
            await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2, within=10)
            assert "20 weeks" in harness.fake.answers()[1]["text"]
            assert harness.fake.answers()[1]["thread_ts"] == thread
            assert unavailable() >= 1

            await proxy.start()  # the database is back
            seen = unavailable()
            await harness.slack.message(
                "And can it be taken in blocks?", ts=thread.replace(".000100", ".000300"), thread_ts=thread
            )
            await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 3, within=10)
            assert unavailable() == seen  # memory read at once
            assert "three blocks" in _answer_text(harness.fake.answers()[2])  # understood with it
    finally:
        await proxy.stop()
