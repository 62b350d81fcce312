"""Feedback storage, answer traces included, on SQLite and on the local PostgreSQL (skipped, saying
so, when none answers)."""

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.chat.feedback import (
    AnswerRecord,
    FeedbackDesk,
    FeedbackStore,
    FeedbackUnavailableError,
    Place,
    asker_id,
    build_feedback_store,
)
from bot.metrics import build_metrics
from graph import AnswerTrace
from graph.trace import AnswerDecision, ChosenCollection, PlanTrace, TraceBranch, TraceHit, TraceRound
from tests.unit.bot.chat.test_memory import POSTGRES_URL, _postgres_answers

OpenStore = Callable[..., Awaitable[FeedbackStore]]


@pytest.fixture(params=["sqlite", "postgresql"])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenStore]:
    """Opens a new store object on the same database each call (a restart, or another replica)."""
    url = None
    if request.param == "postgresql":
        if not _postgres_answers():
            pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: PostgreSQL feedback not tested")
        url = POSTGRES_URL
    opened: list[FeedbackStore] = []

    async def open_one(ttl_days: float = 30, trace_days: float = 30) -> FeedbackStore:
        store = await build_feedback_store(
            data_dir=tmp_path, database_url=url, ttl_days=ttl_days, trace_days=trace_days
        )
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        await store.close()


def _record(question_id: str, created: float = 0.0) -> AnswerRecord:
    return AnswerRecord(
        question_id=question_id,
        platform="slack",
        workspace="T1",
        channel="C1",
        thread="1700000000.000100",
        answer="Parental leave is 20 weeks [1].",
        passage_ids=("people:leave.md#0", "people:leave.md#1"),
        collections=("people", "engineering"),
        created=created,
    )


async def test_a_vote_carries_the_answer_it_rates_across_a_restart(open_store: OpenStore) -> None:
    question_id = uuid.uuid4().hex[:16]  # the PostgreSQL database is shared with other runs
    since = time.time() - 1
    first = await open_store()
    await first.keep_answer(_record(question_id))
    await first.close()

    other = await open_store()  # another replica, or after a restart
    up = await other.vote(question_id, "up", place=Place("slack", "T1", "C1"), voter="U1")
    down = await other.vote(question_id, "down", place=Place("slack", "T1", "C1"), voter="U2")
    assert await other.explain(down.id, "outdated", "  The policy changed in May.  ")
    assert not await other.explain("no-such-vote", "wrong")
    votes = [v for v in await other.votes(since=since) if v.question_id == question_id]
    assert [(v.vote, v.reason, v.comment) for v in votes] == [
        ("up", None, ""),
        ("down", "outdated", "The policy changed in May."),
    ]
    assert votes[0].id == up.id
    assert "U1" not in up.id and "U2" not in down.id  # votes name no one
    for vote in votes:
        assert vote.answer == "Parental leave is 20 weeks [1]."
        assert vote.passage_ids == ("people:leave.md#0", "people:leave.md#1")
        assert vote.collections == ("people", "engineering")
        assert (vote.platform, vote.workspace, vote.channel) == ("slack", "T1", "C1")
    assert votes[0].as_json()["at"].endswith("+00:00")


async def test_a_person_has_one_vote_per_answer_and_may_change_it(open_store: OpenStore) -> None:
    store = await open_store()
    question_id = uuid.uuid4().hex[:16]
    place = Place("slack", "T1", "C1")
    await store.keep_answer(_record(question_id))
    first = await store.vote(question_id, "down", place=place, voter="U1")
    assert await store.explain(first.id, "wrong", "Says 12 weeks.")
    await store.vote(question_id, "down", place=place, voter="U1")  # a double click
    again = await store.vote(question_id, "up", place=place, voter="U1")  # a change of mind
    await store.vote(
        question_id, "up", place=Place("slack", "T2", "C1"), voter="U1"
    )  # another workspace's U1
    votes = [v for v in await store.votes() if v.question_id == question_id]
    # the old reason belonged to the 👎 it replaced; another workspace's U1 is another person
    assert [(v.vote, v.reason, v.comment) for v in votes] == [("up", None, ""), ("up", None, "")]
    assert again.id == first.id and len({v.id for v in votes}) == 2


async def test_answer_records_expire_and_votes_stay(open_store: OpenStore) -> None:
    store = await open_store(ttl_days=1)
    old, fresh = uuid.uuid4().hex[:16], uuid.uuid4().hex[:16]
    await store.keep_answer(_record(old, created=time.time() - 2 * 86400))
    await store.keep_answer(_record(fresh))
    assert await store.answer(old) is None  # expired: never used, even before a sweep
    assert await store.sweep() >= 1
    assert (await store.answer(fresh)) is not None
    vote = await store.vote(old, "down", place=Place("teams", "tenant", "19:abc"), voter="29:x")
    assert (vote.answer, vote.platform, vote.channel) == ("", "teams", "19:abc")  # known by its place
    assert vote.id in {v.id for v in await store.votes()}


async def test_votes_since_a_time_leave_older_ones_out(open_store: OpenStore) -> None:
    store = await open_store()
    question_id = uuid.uuid4().hex[:16]
    await store.vote(question_id, "up", place=Place("slack", "T1", "C1"), voter="U1")
    assert [v for v in await store.votes(since=time.time() + 60) if v.question_id == question_id] == []


async def test_an_unreachable_database_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(FeedbackUnavailableError, match="DATABASE_URL") as caught:
        await build_feedback_store(
            data_dir=tmp_path,
            database_url="postgresql://confer:pw-secret@127.0.0.1:1/x",
            ttl_days=1,
            connect_seconds=0.5,  # nothing listens: the pool would try for 10 s
        )
    assert "pw-secret" not in str(caught.value)


async def test_the_desk_counts_every_click_and_survives_a_lost_store(tmp_path: Path) -> None:
    metrics = build_metrics()
    store = await build_feedback_store(data_dir=tmp_path, database_url=None, ttl_days=1)
    desk = FeedbackDesk(store=store, metrics=metrics)
    await store._db.execute("DROP TABLE confer_feedback_votes")  # the database breaks mid-run
    assert await desk.vote("q1", "up", place=Place("slack", "T1", "C1"), voter="U1") is None
    assert metrics.registry.get_sample_value("confer_feedback_total", {"vote": "up"}) == 1.0
    lost = metrics.registry.get_sample_value("confer_memory_unavailable_total", {"operation": "feedback"})
    assert lost == 1.0
    await store.close()


def test_since_takes_a_date_or_an_iso_time_and_refuses_anything_else() -> None:
    from datetime import UTC, datetime

    from bot.terminal.reports import parse_since

    assert parse_since("2026-11-23") == datetime(2026, 11, 23, tzinfo=UTC).timestamp()  # midnight UTC
    assert parse_since("2026-11-23T12:00+02:00") == datetime(2026, 11, 23, 10, tzinfo=UTC).timestamp()
    for bad in ("yesterday", "2026-13-01", ""):
        with pytest.raises(ValueError, match="--since"):
            parse_since(bad)


async def test_feedback_on_postgresql_shares_the_thread_memory_pool_and_leaves_it_open(
    tmp_path: Path,
) -> None:
    from bot.chat.memory import ThreadKey, Turn, build_thread_memory

    if not _postgres_answers():
        pytest.skip(f"no PostgreSQL answers at {POSTGRES_URL}: the shared pool not tested")
    memory = await build_thread_memory(data_dir=tmp_path, database_url=POSTGRES_URL, ttl_days=30)
    try:
        store = await build_feedback_store(
            data_dir=tmp_path, database_url=POSTGRES_URL, ttl_days=30, postgres=memory.postgres
        )
        assert store._db is memory.postgres  # no pool of its own
        question_id = uuid.uuid4().hex[:16]
        await store.keep_answer(_record(question_id, created=time.time()))
        kept = await store.answer(question_id)
        assert kept is not None and kept.passage_ids == ("people:leave.md#0", "people:leave.md#1")
        await store.close()
        key = ThreadKey("slack", "T1", "C1", f"{uuid.uuid4().hex}.0001")
        await memory.remember(key, Turn(asked="q", question="q"))  # the pool outlived the feedback
        assert [t.asked for t in await memory.turns(key)] == ["q"]
    finally:
        await memory.close()
    assert not (tmp_path / "feedback.sqlite").exists()


def _trace() -> AnswerTrace:
    hit = TraceHit(
        passage_id="p_1", collection="people", title="Parental leave", fused=0.9, word=3.2, meaning=0.7
    )
    branch = TraceBranch(
        collection="people",
        round=1,
        queries=("parental leave",),
        status="ok",
        seconds=0.02,
        hits=(hit,),
        found=4,
    )
    return AnswerTrace(
        question="How long is parental leave?",
        plan=PlanTrace(
            kind="factual",
            routing="automatic",
            collections=(ChosenCollection(name="people", why="routing", score=0.9),),
            scores=(("people", 0.9), ("security", 0.2)),
        ),
        rounds=(TraceRound(number=1, seconds=0.03, branches=(branch,)),),
        decision=AnswerDecision(outcome="found", probability=0.93),
        allowed=("people", "security"),
    )


async def test_a_trace_is_read_back_whole_after_a_restart(open_store: OpenStore) -> None:
    question_id = uuid.uuid4().hex[:16]  # the PostgreSQL database is shared with other runs
    await (await open_store()).keep_trace(question_id, _trace())
    assert await (await open_store()).trace(question_id) == _trace()
    assert await (await open_store()).trace(uuid.uuid4().hex[:16]) is None


async def test_a_trace_opens_only_for_the_person_who_asked(open_store: OpenStore) -> None:
    question_id, unknown = uuid.uuid4().hex[:16], uuid.uuid4().hex[:16]
    await (await open_store()).keep_trace(question_id, _trace(), asker=asker_id(question_id, "slack", "U1"))
    await (await open_store()).keep_trace(unknown, _trace(), asker=asker_id(unknown, "slack", ""))
    kept = await (await open_store()).kept_trace(question_id)
    assert kept is not None and kept.trace == _trace()
    assert "U1" not in kept.asker  # kept as a hash, naming no one
    assert kept.asked_by(question_id, "slack", "U1")
    assert not kept.asked_by(question_id, "slack", "U2") and not kept.asked_by(question_id, "teams", "U1")
    # Kept again under the same id (a retried answer): replaced, its asker too.
    await (await open_store()).keep_trace(question_id, _trace(), asker=asker_id(question_id, "slack", "U2"))
    again = await (await open_store()).kept_trace(question_id)
    assert again is not None and again.asked_by(question_id, "slack", "U2")
    assert not again.asked_by(question_id, "slack", "U1")
    nobody = await (await open_store()).kept_trace(unknown)  # asked by someone not known: no one opens it
    assert (
        nobody is not None
        and not nobody.asked_by(unknown, "slack", "")
        and not nobody.asked_by(unknown, "slack", "U1")
    )


async def test_a_trace_table_made_before_askers_were_kept_gets_the_column(tmp_path: Path) -> None:
    import aiosqlite

    async with aiosqlite.connect(tmp_path / "feedback.sqlite") as db:
        await db.execute(
            "CREATE TABLE confer_feedback_traces (question_id TEXT PRIMARY KEY, trace TEXT NOT NULL, "
            "created DOUBLE PRECISION NOT NULL)"
        )
        await db.execute(
            "INSERT INTO confer_feedback_traces VALUES (?, ?, ?)",
            ("old", _trace().model_dump_json(), time.time()),
        )
        await db.commit()
    for _ in range(2):  # opened again: the column is there already
        store = await build_feedback_store(data_dir=tmp_path, database_url=None, ttl_days=30)
        try:
            old = await store.kept_trace("old")
            assert old is not None and old.trace == _trace() and not old.asked_by("old", "slack", "U1")
            await store.keep_trace("new", _trace(), asker=asker_id("new", "slack", "U1"))
            new = await store.kept_trace("new")
            assert new is not None and new.asked_by("new", "slack", "U1")
        finally:
            await store.close()


async def test_a_trace_past_its_retention_is_gone_and_swept(open_store: OpenStore) -> None:
    store = await open_store(trace_days=1)
    old, new = uuid.uuid4().hex[:16], uuid.uuid4().hex[:16]
    await store.keep_trace(old, _trace(), created=time.time() - 2 * 86400)
    await store.keep_trace(new, _trace())
    assert await store.trace(old) is None and await store.trace(new) is not None
    assert await store.sweep() >= 1
    longer = await open_store(trace_days=30)  # a longer retention does not bring a swept trace back
    assert await longer.trace(old) is None and await longer.trace(new) is not None


async def test_a_vote_says_whether_its_answers_trace_is_kept(open_store: OpenStore) -> None:
    store = await open_store()
    since = time.time() - 1
    traced, untraced = uuid.uuid4().hex[:16], uuid.uuid4().hex[:16]
    await store.keep_trace(traced, _trace())
    place = Place("slack", "T1", "C1")
    await store.vote(traced, "up", place=place, voter="U1")
    await store.vote(untraced, "down", place=place, voter="U1")
    votes = {v.question_id: v.traced for v in await store.votes(since=since)}
    assert votes[traced] is True and votes[untraced] is False
