"""Feedback on answers: what each answer was (kept when it is posted), and every vote on it.

When an answer is posted, its record (a question id, the answer's text, the ids of the passages it
cites, the collections searched, and where it was posted) is kept, keyed by the question id that its
feedback buttons carry, so a click minutes or days later still knows what it rates. Records expire
after ``CONFER_THREAD_TTL_DAYS`` (like the thread memory); votes are kept, each with a copy of the
answer it rates, its reason (👎: wrong, incomplete, out of date, other) and an optional comment.
No user ids are kept. Each answer's trace ("How I found this": ``graph.trace``) is kept beside its
record under the same question id, for ``CONFER_TRACE_RETENTION_DAYS``, with who asked as a hash
(``asker_id``): only the person who asked opens it.

Storage sits beside the thread memory, on the same store layer (``bot.chat.stores``): a SQLite file of its
own in ``CONFER_DATA_DIR`` by default, PostgreSQL with ``DATABASE_URL`` (two small tables of
Confer's own; the server keeps them through the thread memory's connection pool).
A store that fails mid-run raises ``FeedbackUnavailableError``; callers tell the person their vote
could not be kept, and the answer itself never depends on it.
"""

import contextlib
import hashlib
import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from bot.chat.stores import (
    CONNECT_SECONDS,
    Database,
    PostgresDatabase,
    StoreOpenError,
    Sweeper,
    bounded,
    open_postgres,
    open_sqlite,
)
from bot.metrics import ConferMetrics
from graph import AnswerTrace
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

FEEDBACK_FILE = "feedback.sqlite"
OPERATION_TIMEOUT = 3.0  # seconds: a slow store costs the vote's record, never an answer
MAX_ANSWER_CHARS = 4000
MAX_COMMENT_CHARS = 1000
SWEEP_MINUTES = 60

Vote = Literal["up", "down"]
Reason = Literal["wrong", "incomplete", "outdated", "other"]
REASONS: tuple[Reason, ...] = get_args(Reason)
VOTES: tuple[Vote, ...] = get_args(Vote)


# What a stored text must not carry: C0 controls but tab and newline, DEL, C1 controls (ESC, BEL
# and CSI start terminal escape sequences), and the bidirectional overrides and isolates that make
# a line read differently from what it holds.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What a printed line must show escaped: the above, and tab and newline (one vote, a few lines).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """``text`` without control characters (a comment or an answer as it is stored)."""
    return _CONTROLS.sub("", text)


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: every control character shown as an escape
    (``\\x1b``, ``\\n``, ``\\u202e``), never sent to the terminal (stored votes may predate
    ``strip_controls``)."""
    return _UNPRINTABLE.sub(_escape, text)


def json_printable(text: str) -> str:
    """JSON text (``ensure_ascii=False``) with the control characters JSON leaves raw (DEL, C1,
    bidirectional controls) written as ``\\uXXXX``: the same JSON value, safe on a terminal."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escape(match: "re.Match[str]") -> str:
    char = match.group()
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class FeedbackUnavailableError(ConferError):
    """The feedback database cannot be reached (at start: names the setting)."""


class AnswerRecord(BaseModel):
    """A posted answer, as a vote on it needs it."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    platform: str
    workspace: str
    channel: str
    thread: str
    answer: str
    passage_ids: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    created: float = 0.0  # Unix time


class VoteRecord(BaseModel):
    """One vote, with a copy of what it rates (the answer record may expire; the vote does not)."""

    model_config = ConfigDict(frozen=True)

    id: str
    question_id: str
    vote: Vote
    reason: Reason | None = None
    comment: str = ""
    at: float  # Unix time
    platform: str
    workspace: str
    channel: str
    answer: str = ""
    passage_ids: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    traced: bool = False  # whether the answer's trace is kept (``confer trace QUESTION_ID``)

    def as_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["at"] = datetime.fromtimestamp(self.at, UTC).isoformat(timespec="seconds")
        return data


def new_question_id() -> str:
    """A random id per answered question: it names nothing a person wrote."""
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class Place:
    """Where a vote came from, when its answer record is gone (expired, or another store)."""

    platform: str
    workspace: str
    channel: str


def vote_id(question_id: str, place: Place, voter: str) -> str:
    """The id of ``voter``'s vote on an answer: the same for every click they make on it, and
    naming no one (a hash); a click without a known voter is a vote of its own."""
    if not voter:
        return uuid.uuid4().hex
    key = "\0".join((question_id, place.platform, place.workspace, voter))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def asker_id(question_id: str, platform: str, user: str) -> str:
    """Who asked the question ``question_id``, as its trace keeps it: a hash naming no one, the
    same for that person's click on it (``""``: nobody known, whom no click matches)."""
    if not user:
        return ""
    return hashlib.sha256("\0".join(("asker", question_id, platform, user)).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class KeptTrace:
    trace: AnswerTrace
    asker: str  # ``asker_id`` of who asked ("" when not known)

    def asked_by(self, question_id: str, platform: str, user: str) -> bool:
        return bool(self.asker) and self.asker == asker_id(question_id, platform, user)


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS confer_feedback_answers (
        question_id TEXT PRIMARY KEY, platform TEXT NOT NULL, workspace TEXT NOT NULL,
        channel TEXT NOT NULL, thread TEXT NOT NULL, answer TEXT NOT NULL,
        passage_ids TEXT NOT NULL, collections TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS confer_feedback_answers_created
        ON confer_feedback_answers (created)""",
    """CREATE TABLE IF NOT EXISTS confer_feedback_votes (
        id TEXT PRIMARY KEY, question_id TEXT NOT NULL, vote TEXT NOT NULL, reason TEXT,
        comment TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, platform TEXT NOT NULL,
        workspace TEXT NOT NULL, channel TEXT NOT NULL, answer TEXT NOT NULL,
        passage_ids TEXT NOT NULL, collections TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS confer_feedback_votes_at ON confer_feedback_votes (at)",
    """CREATE TABLE IF NOT EXISTS confer_feedback_traces (
        question_id TEXT PRIMARY KEY, trace TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,
        asker TEXT NOT NULL DEFAULT '')""",
    "CREATE INDEX IF NOT EXISTS confer_feedback_traces_created ON confer_feedback_traces (created)",
)
# One vote per person and answer: a second click replaces the first (a change of mind from 👍 to
# 👎 keeps only the 👎, a double click counts once); a reason given earlier belongs to the old vote.
_INSERT_VOTE = (
    "INSERT INTO confer_feedback_votes (id, question_id, vote, reason, comment, at, platform, workspace, "
    "channel, answer, passage_ids, collections) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET vote = excluded.vote, reason = NULL, comment = '', at = excluded.at"
)
_SELECT_VOTES = (
    "SELECT v.id, v.question_id, v.vote, v.reason, v.comment, v.at, v.platform, v.workspace, v.channel, "
    "v.answer, v.passage_ids, v.collections, t.question_id IS NOT NULL FROM confer_feedback_votes v "
    "LEFT JOIN confer_feedback_traces t ON t.question_id = v.question_id AND t.created >= ? "
    "WHERE v.at >= ? ORDER BY v.at, v.id"
)


class FeedbackStore:
    """Answer records and votes in SQLite or PostgreSQL."""

    def __init__(
        self,
        database: Database,
        *,
        backend: str,
        ttl_days: float,
        owns: bool = True,
        trace_days: float = 30.0,
    ) -> None:
        self._db = database
        self._owns = owns  # closed with the store, unless it is another store's (a shared pool)
        self.backend = backend
        self._ttl_seconds = ttl_days * 86400
        self.trace_days = trace_days
        self._sweeper = Sweeper(
            "confer-feedback-sweep",
            self.sweep,
            what="answer records",
            unavailable=(FeedbackUnavailableError,),
            minutes=SWEEP_MINUTES,
        )

    async def keep_answer(self, record: AnswerRecord) -> None:
        """Keep what a posted answer was, for the votes on it (replaces a record with its id)."""
        created = record.created or time.time()
        await self._call(
            self._db.execute(
                "DELETE FROM confer_feedback_answers WHERE question_id = ?", (record.question_id,)
            )
        )
        await self._call(
            self._db.execute(
                "INSERT INTO confer_feedback_answers (question_id, platform, workspace, channel, thread, "
                "answer, passage_ids, collections, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.question_id,
                    record.platform,
                    record.workspace,
                    record.channel,
                    record.thread,
                    strip_controls(record.answer)[:MAX_ANSWER_CHARS],
                    json.dumps(list(record.passage_ids)),
                    json.dumps(list(record.collections)),
                    created,
                ),
            )
        )

    async def keep_trace(
        self, question_id: str, trace: AnswerTrace, *, asker: str = "", created: float | None = None
    ) -> None:
        """Keep an answer's trace under its question id (replaces a trace with that id), with who
        asked (``asker_id``): one statement, one commit (every chat answer pays for it)."""
        await self._call(
            self._db.execute(
                "INSERT INTO confer_feedback_traces (question_id, trace, created, asker) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (question_id) DO UPDATE SET trace = excluded.trace, created = excluded.created, "
                "asker = excluded.asker",
                (question_id, trace.model_dump_json(), created or time.time(), asker),
            )
        )

    async def kept_trace(self, question_id: str) -> KeptTrace | None:
        """The trace kept under ``question_id`` and who asked, or ``None`` once it expired (or
        was never kept)."""
        rows = await self._call(
            self._db.fetch(
                "SELECT trace, asker FROM confer_feedback_traces WHERE question_id = ? AND created >= ?",
                (question_id, self._trace_since()),
            )
        )
        return KeptTrace(AnswerTrace.model_validate_json(rows[0][0]), str(rows[0][1])) if rows else None

    async def trace(self, question_id: str) -> AnswerTrace | None:
        """The trace kept under ``question_id``, or ``None`` once it expired (or was never kept)."""
        kept = await self.kept_trace(question_id)
        return kept.trace if kept is not None else None

    def _trace_since(self) -> float:
        return time.time() - self.trace_days * 86400

    async def answer(self, question_id: str) -> AnswerRecord | None:
        """The record of a posted answer, or ``None`` once it expired (or was never kept)."""
        rows = await self._call(
            self._db.fetch(
                "SELECT question_id, platform, workspace, channel, thread, answer, passage_ids, "
                "collections, created FROM confer_feedback_answers WHERE question_id = ? AND created >= ?",
                (question_id, time.time() - self._ttl_seconds),
            )
        )
        if not rows:
            return None
        row = rows[0]
        return AnswerRecord(
            question_id=row[0],
            platform=row[1],
            workspace=row[2],
            channel=row[3],
            thread=row[4],
            answer=row[5],
            passage_ids=tuple(json.loads(row[6])),
            collections=tuple(json.loads(row[7])),
            created=float(row[8]),
        )

    async def vote(self, question_id: str, vote: Vote, *, place: Place, voter: str) -> VoteRecord:
        """Store one click; the answer's record is copied into the vote when it is still kept.
        Returns the stored vote (its ``id`` lets a later reason be added to it). ``voter`` (the
        platform's user id) makes the vote one per person and answer; it is stored only hashed."""
        record = await self.answer(question_id)
        stored = VoteRecord(
            id=vote_id(question_id, place, voter),
            question_id=question_id,
            vote=vote,
            at=time.time(),
            platform=record.platform if record else place.platform,
            workspace=record.workspace if record else place.workspace,
            channel=record.channel if record else place.channel,
            answer=record.answer if record else "",
            passage_ids=record.passage_ids if record else (),
            collections=record.collections if record else (),
        )
        await self._call(
            self._db.execute(
                _INSERT_VOTE,
                (
                    stored.id,
                    stored.question_id,
                    stored.vote,
                    None,
                    "",
                    stored.at,
                    stored.platform,
                    stored.workspace,
                    stored.channel,
                    stored.answer,
                    json.dumps(list(stored.passage_ids)),
                    json.dumps(list(stored.collections)),
                ),
            )
        )
        return stored

    async def explain(self, vote_id: str, reason: Reason, comment: str = "") -> bool:
        """Add the reason (and optional comment) a 👎 form was submitted with; ``False`` when no
        such vote exists."""
        changed = await self._call(
            self._db.execute(
                "UPDATE confer_feedback_votes SET reason = ?, comment = ? WHERE id = ?",
                (reason, strip_controls(comment).strip()[:MAX_COMMENT_CHARS], vote_id),
            )
        )
        return bool(changed)

    async def votes(self, *, since: float | None = None) -> list[VoteRecord]:
        """Every vote at or after ``since`` (Unix time), oldest first."""
        rows = await self._call(
            self._db.fetch(
                _SELECT_VOTES,
                (self._trace_since(), since if since is not None else 0.0),
            )
        )
        return [
            VoteRecord(
                id=row[0],
                question_id=row[1],
                vote=row[2],
                reason=row[3],
                comment=row[4],
                at=float(row[5]),
                platform=row[6],
                workspace=row[7],
                channel=row[8],
                answer=row[9],
                passage_ids=tuple(json.loads(row[10])),
                collections=tuple(json.loads(row[11])),
                traced=bool(row[12]),
            )
            for row in rows
        ]

    async def sweep(self) -> int:
        """Delete expired answer records and traces now; returns how many (votes stay)."""
        removed = await self._call(
            self._db.execute(
                "DELETE FROM confer_feedback_answers WHERE created < ?", (time.time() - self._ttl_seconds,)
            )
        )
        traces = await self._call(
            self._db.execute("DELETE FROM confer_feedback_traces WHERE created < ?", (self._trace_since(),))
        )
        return int(removed) + int(traces)

    def start_sweeping(self) -> None:
        """Sweep expired answer records every ``SWEEP_MINUTES`` on the running loop until ``close``."""
        self._sweeper.start()

    async def close(self) -> None:
        await self._sweeper.stop()
        if self._owns:
            with contextlib.suppress(Exception):
                await self._db.close()

    async def _call(self, operation: Any) -> Any:
        return await bounded(
            operation,
            seconds=OPERATION_TIMEOUT,
            unavailable=lambda error: FeedbackUnavailableError(f"feedback ({self.backend}): {error}"),
        )


@dataclass
class FeedbackDesk:
    """The chat core's one way to keep answers and votes, for every platform: failures are logged
    and counted (``confer_memory_unavailable_total{operation="feedback"}``), never raised, and every
    click counts in ``confer_feedback_total{vote}`` whether or not it could be stored."""

    store: FeedbackStore | None
    metrics: ConferMetrics

    async def keep_answer(self, record: AnswerRecord) -> None:
        if self.store is None:
            return
        try:
            await self.store.keep_answer(record)
        except FeedbackUnavailableError as exc:
            self._unavailable(exc)

    @property
    def trace_days(self) -> float:
        return self.store.trace_days if self.store is not None else 30.0

    async def keep_trace(self, question_id: str, trace: AnswerTrace, *, asker: str = "") -> bool:
        """Whether the trace was kept (``asker``: ``asker_id`` of who asked)."""
        if self.store is None:
            return False
        try:
            await self.store.keep_trace(question_id, trace, asker=asker)
        except FeedbackUnavailableError as exc:
            self._unavailable(exc)
            return False
        return True

    async def trace(self, question_id: str) -> KeptTrace | None:
        """The kept trace and who asked; ``None`` when it is not kept. Raises
        ``FeedbackUnavailableError`` (the caller says so, rather than that it expired)."""
        if self.store is None:
            return None
        try:
            return await self.store.kept_trace(question_id)
        except FeedbackUnavailableError as exc:
            self._unavailable(exc)
            raise

    async def vote(self, question_id: str, vote: Vote, *, place: Place, voter: str) -> VoteRecord | None:
        """The stored vote (one per ``voter`` and answer), or ``None`` when it could not be stored."""
        self.metrics.feedback.labels(vote).inc()
        if self.store is None:
            return None
        try:
            stored = await self.store.vote(question_id, vote, place=place, voter=voter)
        except FeedbackUnavailableError as exc:
            self._unavailable(exc)
            return None
        logger.info(
            "answer feedback",
            extra={
                "vote": vote,
                "question_id": question_id,
                "platform": place.platform,
                "known": bool(stored.answer),
            },
        )
        return stored

    async def explain(self, vote_id: str, reason: Reason, comment: str = "") -> bool:
        if self.store is None or not vote_id:
            return False
        try:
            explained = await self.store.explain(vote_id, reason, comment)
        except FeedbackUnavailableError as exc:
            self._unavailable(exc)
            return False
        logger.info("feedback reason", extra={"reason": reason, "comment": bool(comment.strip())})
        logger.debug("feedback comment", extra={"vote_id": vote_id, "comment": comment})
        return explained

    def _unavailable(self, exc: FeedbackUnavailableError) -> None:
        self.metrics.memory_unavailable.labels("feedback").inc()
        logger.warning("feedback store unavailable: %s", exc)


async def build_feedback_store(
    *,
    data_dir: Path,
    database_url: str | None,
    ttl_days: float,
    connect_seconds: float = CONNECT_SECONDS,
    postgres: PostgresDatabase | None = None,
    trace_days: float = 30.0,
) -> FeedbackStore:
    """SQLite in ``data_dir``, or PostgreSQL at ``database_url`` (through ``bot.chat.stores``, as the
    thread memory); tables are created when missing. ``postgres``: the pool the thread memory
    opened at ``database_url``, used instead of a pool of the feedback's own (and not closed with
    it). With SQLite the feedback keeps its own file (``feedback.sqlite``) beside the memory's.

    Raises ``FeedbackUnavailableError`` naming ``DATABASE_URL`` (or the data folder) when the store
    cannot be opened; the message never contains the URL (it may hold a password)."""
    path = data_dir / FEEDBACK_FILE
    try:
        if database_url and postgres is not None:
            database: Database = postgres
        elif database_url:
            database = await open_postgres(
                database_url, max_size=2, wait_seconds=OPERATION_TIMEOUT, connect_seconds=connect_seconds
            )
        else:
            database = await open_sqlite(path)
    except StoreOpenError as exc:
        if database_url:
            raise FeedbackUnavailableError(
                "DATABASE_URL: PostgreSQL for feedback does not answer (check the host, port, database "
                "and credentials, or unset DATABASE_URL to keep feedback in CONFER_DATA_DIR)"
            ) from None
        raise FeedbackUnavailableError(
            f"CONFER_DATA_DIR: cannot open the feedback store at {path} ({exc.reason})"
        ) from None
    shared = database is postgres
    store = FeedbackStore(
        database, backend=database.backend, ttl_days=ttl_days, owns=not shared, trace_days=trace_days
    )
    try:
        if database.backend == "sqlite":
            # Every chat answer writes its record and trace here: in WAL mode, NORMAL commits
            # without waiting for the disk each time (a power loss may lose the last answers'
            # records, never corrupt the file); FULL cost each answer an fsync.
            await store._call(database.execute("PRAGMA synchronous=NORMAL"))
        for statement in _SCHEMA:
            await store._call(database.execute(statement))
        await store._call(_add_asker(database))
    except FeedbackUnavailableError as exc:
        await store.close()
        where = "DATABASE_URL" if database_url else "CONFER_DATA_DIR"
        raise FeedbackUnavailableError(f"{where}: cannot create the feedback tables ({exc})") from None
    return store


async def _add_asker(database: Database) -> None:
    """The traces table of a store made before traces kept who asked gets that column (a trace
    kept without it opens for nobody)."""
    if database.backend == "postgresql":
        await database.execute(
            "ALTER TABLE confer_feedback_traces ADD COLUMN IF NOT EXISTS asker TEXT NOT NULL DEFAULT ''"
        )
        return
    columns = await database.fetch("PRAGMA table_info(confer_feedback_traces)")
    if all(column[1] != "asker" for column in columns):
        await database.execute("ALTER TABLE confer_feedback_traces ADD COLUMN asker TEXT NOT NULL DEFAULT ''")
