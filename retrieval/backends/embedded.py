"""Embedded search: SQLite FTS5 with BM25, one FTS table per collection, in ``CONFER_DATA_DIR``.

WAL mode lets many readers search while ``confer index`` writes; each sync is one transaction,
so a reader sees either the old or the new collection, never half of it.
"""

import asyncio
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import snowballstemmer

from retrieval.analysis import analyse, fingerprint, offer
from retrieval.audience import Audience, readers_key
from retrieval.collections import Collection
from retrieval.embeddings import (
    BACKGROUND_NICENESS,
    Embedder,
    ProgressCallback,
    VectorCache,
    Vectors,
    embed_with_cache,
    embedder_key,
    lower_thread_priority,
    meanings,
    passage_text,
    query_vector,
    recorded_by,
    single_threaded_blas,
)
from retrieval.errors import (
    CollectionNotIndexedError,
    DataDirError,
    EmbeddingError,
    IndexingError,
    SearchUnavailableError,
)
from retrieval.language import foreign_stems
from retrieval.passages import TEXT_FORMAT, CollectionStats, Passage, SyncStats, content_digest, digest_of
from retrieval.scoring import CorpusStats, best_by_collection, bm25, combine_stats, fuse, query_phrases
from retrieval.text import terms, unique

logger = logging.getLogger(__name__)

T = TypeVar("T")

DATABASE_NAME = "index.sqlite3"
TITLE_WEIGHT = 2.0
MAX_QUERY_TERMS = 32
# A collection whose last search took no more CPU than this is searched on the event loop's own
# thread; one above it, on the pool.
QUICK_SEARCH_SECONDS = 0.002
# An on-loop search that has used this much of the loop thread's CPU is interrupted and runs again
# on the pool: the most a search can hold up the event loop (SQLite checks every _PROGRESS_STEPS
# virtual-machine steps, about 0.2 ms apart in a bench search). CPU, not wall time: a thread the
# machine set aside for a moment has not held up its loop for longer.
INLINE_LIMIT_SECONDS = 0.004
_PROGRESS_STEPS = 2000
# A search on the event loop that SQLite stopped (past its deadline) or that met a lock: the pool's
# connections wait for locks and have no deadline.
_RETRY_ON_POOL = frozenset({sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
# FTS5's bm25 adds idf × f(k1 + 1) / (f + k1(1 − b + b·len/avglen)) per phrase (k1 = 1.2), which is
# below idf × (k1 + 1) however often the phrase occurs; a phrase in half the rows or more has its
# idf clamped to 1e-6.
_BM25_K1_PLUS_1 = 2.2
_CLAMPED_IDF = 1e-6
# Narrowing leaves out common phrases whose ceilings add up to less than a guess at the limit-th
# score: a multiple of the rarest phrase's idf (a row with that phrase once, of average length,
# scores about its idf), the lowest of the multiples its collection's last searches showed, 1.0
# before any. A wrong guess costs a second query, never a different answer. One fixed multiple
# for every corpus made hotpotqa500's narrowed searches fall back 15 % of the time at 1.0 and 38 %
# at 1.5, while bench/search.py's Zipf corpus, whose eighth best scores 1.3–1.8 ×, left out half
# as much at 1.0 as at 1.5 (0–2 % fallbacks).
_FIRST_GUESS = 1.0
_RATIOS_KEPT = 8
# Phrase counts kept per collection between searches (``_PhraseCounts``): emptied when this many.
_COUNTS_KEPT = 16384
# A collection without stored common terms for its index's state looks for them again this often.
_TERMS_RECHECK_SECONDS = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    url TEXT NOT NULL,
    text TEXT NOT NULL,
    analysis TEXT,
    UNIQUE (collection, id)
);
CREATE INDEX IF NOT EXISTS passages_by_source ON passages (collection, source);
CREATE TABLE IF NOT EXISTS collections (name TEXT PRIMARY KEY, indexed_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_by_collection ON vectors (collection);
"""
# Who may read the passages that have readers: each readers set's principals, under its key.
_ACCESS_SCHEMA = """
CREATE TABLE IF NOT EXISTS access_readers (
    access TEXT NOT NULL,
    principal TEXT NOT NULL,
    PRIMARY KEY (access, principal)
);
CREATE INDEX IF NOT EXISTS access_by_principal ON access_readers (principal, access);
CREATE INDEX IF NOT EXISTS passages_by_access ON passages (access) WHERE access IS NOT NULL;
"""
# A hybrid probe reads each collection's best few passages by words and by meaning.
_PROBE_DEPTH = 3


@lru_cache(maxsize=1024)
def fts_query(query: str, *, broad: bool = False) -> str | None:
    """An FTS5 MATCH expression: content terms OR-ed (BM25 ranks by how many match), quoted.
    Cached: a question's first round sends the same query to every collection it searches."""
    content = unique(terms(query))[:MAX_QUERY_TERMS]
    if not content:
        return None
    suffix = "*" if broad else ""
    # A question in another language than English also matches its words' stems as prefixes
    # (the index stems with Porter, which is English-only): "Urlaubstag" finds "Urlaubstage".
    stems = [f'"{s}"*' for s in foreign_stems(query)]
    return " OR ".join([*(f'"{t}"{suffix}' for t in content), *stems])


class EmbeddedBackend:
    """SQLite FTS5 search backend. Build with ``build_embedded_backend``."""

    def __init__(
        self,
        *,
        path: Path,
        workers: int = 2,
        quick_search_seconds: float = QUICK_SEARCH_SECONDS,
        embedder: Embedder | None = None,
        vector_cache: VectorCache | None = None,
        on_embedding_failure: Callable[[str], None] | None = None,
        background_niceness: int = BACKGROUND_NICENESS,
    ) -> None:
        self._path = path
        # Search by meaning beside words (``None``: words only, as before embeddings existed).
        self._embedder = embedder
        self._vector_cache = vector_cache
        self._on_embedding_failure = on_embedding_failure
        # Each collection's vectors in memory, with the ``indexed_at`` they were read at.
        self._matrices: dict[str, tuple[float, _Vectors]] = {}
        self._matrix_lock = threading.Lock()
        self._warned: set[str] = set()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # Where a search runs. A collection's searches run on the event loop's thread once one of
        # them took at most QUICK_SEARCH_SECONDS of CPU (the sample collections: ~0.4 ms): handing
        # a search to a thread and its result back cost more than the search (a thread's wake-up,
        # the loop's self-pipe, SQLite's allocation mutex and the GIL at every row; a question at
        # 8 collections, alternating questions in one process: 30 → 26 ms of CPU). Such a search
        # runs on a connection of its own that never waits for a lock (one held sends that search
        # to the pool) and that SQLite stops past INLINE_LIMIT_SECONDS (the search runs again on
        # the pool, where its CPU time files its collection anew). A collection not searched yet,
        # or whose searches take longer (a large one), is searched on the pool. Two pool threads:
        # eight searches of 200k passages at once took 5 % less time (p95 20 % less) than on one
        # thread for 35 % more CPU; four were no faster, for 60-80 % more. Writes and the rest use
        # the pool. With an embedder, its threads run ``background_niceness`` nicer than the rest
        # of the process, so that a question's embedding is not kept waiting for a CPU by searches
        # (the event loop's own searches are quick ones); without, as before embeddings existed.
        self._executor = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix="confer-sqlite",
            initializer=lower_thread_priority,
            initargs=(background_niceness if embedder is not None else 0,),
        )
        self._quick_search_seconds = quick_search_seconds
        # Each collection searched so far: quick (True) or slow (False), by its last search.
        self._quick: dict[str, bool] = {}
        self._loop_connection: sqlite3.Connection | None = None
        self._loop_connection_lock = threading.Lock()
        self._loop_thread: int | None = None
        self._interrupt_at = math.inf
        # Probes of this many collections or more run on the pool: one was stopped on the loop.
        self._probe_pool_from = math.inf
        self._analysis: dict[sqlite3.Connection, bool] = {}
        # Whether a connection's index stores readers (not a read-only index from before them).
        self._readers: dict[sqlite3.Connection, bool] = {}
        self._narrowings: dict[str, _Narrowing] = {}
        self._counts: dict[str, _PhraseCounts] = {}
        self._write_lock = asyncio.Lock()
        # Collections seen indexed: once indexed, a collection stays so until it is dropped, so the
        # check is one query per collection and process, not one per search. A collection dropped by
        # another process shows as a missing table, which clears its entry (``_missing``).
        self._indexed_names: set[str] = set()

    @property
    def name(self) -> str:
        return "embedded"

    @property
    def path(self) -> Path:
        return self._path

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._path, timeout=30, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.executescript(_SCHEMA)
        analysis = _add_analysis_column(connection)
        readers = _add_access_column(connection)
        _add_column(connection, "collections", "embedder", "TEXT")
        _add_column(connection, "collections", "text_format", "INTEGER")
        _add_column(connection, "collections", "generation", "INTEGER NOT NULL DEFAULT 0")
        with self._lock:
            self._connections.append(connection)
            self._analysis[connection] = analysis
            self._readers[connection] = readers
        return connection

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._open()
        return connection

    async def _run(self, function: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: function(self._connection()))

    async def _run_read(
        self,
        collections: Sequence[Collection],
        function: Callable[[sqlite3.Connection], T],
        *,
        learn: bool = True,
    ) -> T:
        """Run a search (or probe) of these collections where their last searches say it belongs:
        on the event loop if each took at most QUICK_SEARCH_SECONDS, else on the pool. A search
        (``learn``) files its collection by its CPU time: a collection's size changes when it is
        indexed again."""

        def timed(db: sqlite3.Connection) -> T:
            started = time.thread_time()
            try:
                return function(db)
            finally:
                if learn:
                    self._file(collections, time.thread_time() - started)

        db = self._loop_connection
        if (
            db is not None
            and collections
            and all(self._quick.get(c.name, False) for c in collections)
            and (learn or len(collections) < self._probe_pool_from)
            and self._loop_thread in (None, threading.get_ident())
        ):
            # Only one thread uses it: an event loop in another thread searches on the pool.
            self._loop_thread = threading.get_ident()
            self._interrupt_at = time.thread_time() + INLINE_LIMIT_SECONDS
            try:
                return timed(db)
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode not in _RETRY_ON_POOL:
                    raise
                # Stopped at its deadline, or a lock was held: the pool runs it in full. A stopped
                # search's collection goes with it (its run there files it anew by its CPU time);
                # a stopped probe sends probes of as many collections to the pool from now on.
                if exc.sqlite_errorcode == sqlite3.SQLITE_INTERRUPT:
                    if learn:
                        self._file(collections, math.inf)
                    else:
                        self._probe_pool_from = min(self._probe_pool_from, len(collections))
            finally:
                self._interrupt_at = math.inf
        return await self._run(timed)

    def _open_loop_connection(self) -> None:
        """The event loop's connection, opened on the pool thread that first found a collection
        quick (opening may write the schema): it never waits for a lock and stops a search that
        runs past its deadline."""
        with self._loop_connection_lock:
            if self._loop_connection is not None:
                return
            connection = self._open()
            connection.execute("PRAGMA busy_timeout = 0")
            connection.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)
            self._loop_connection = connection

    def _past_deadline(self) -> bool:
        return time.thread_time() > self._interrupt_at

    def _file(self, collections: Sequence[Collection], seconds: float) -> None:
        quick = seconds <= self._quick_search_seconds
        for collection in collections:
            self._quick[collection.name] = quick
        if quick and self._loop_connection is None:
            try:
                self._open_loop_connection()
            except sqlite3.Error:
                # Searched on the pool, as before: the search that found it quick has its result.
                logger.warning("no event-loop connection to the index", exc_info=True)

    def _narrowing(self, collection: Collection, db: sqlite3.Connection) -> "_Narrowing | None":
        """A slow (large) collection's narrowing record; None for a quick one, searched plainly:
        there, narrowing's extra counts and NOT cost more than the scoring it saves (and None on the
        loop's connection, which runs no transaction a deadline could leave open)."""
        if self._quick.get(collection.name, True) or db is self._loop_connection:
            return None
        return self._narrowings.setdefault(collection.name, _Narrowing())

    def _phrase_counts(self, collection: Collection) -> "_PhraseCounts":
        return self._counts.setdefault(collection.name, _PhraseCounts(collection.name))

    def _hidden(
        self, db: sqlite3.Connection, collection: Collection, audience: Audience | None
    ) -> "_Hidden | None":
        """The collection's passages ``audience`` may not read (``_hidden_rows``); none in an index
        that stores no readers."""
        return _hidden_rows(collection, audience) if self._readers.get(db, False) else None

    @staticmethod
    def _table(collection: Collection) -> str:
        return f'"fts_{collection.name}"'  # names are validated slugs: safe to quote

    def _indexed(self, db: sqlite3.Connection, collection: Collection) -> bool:
        if collection.name in self._indexed_names:
            return True
        row = db.execute("SELECT 1 FROM collections WHERE name = ?", (collection.name,)).fetchone()
        if row is not None:
            self._indexed_names.add(collection.name)
        return row is not None

    def _missing(self, db: sqlite3.Connection, collection: Collection, error: sqlite3.Error) -> bool:
        """After a failed query: was the collection dropped since it was seen indexed?"""
        if (
            not isinstance(error, sqlite3.OperationalError)
            or error.sqlite_errorcode in _RETRY_ON_POOL
            or collection.name not in self._indexed_names
        ):
            return False
        self._indexed_names.discard(collection.name)
        return not self._indexed(db, collection)

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
        audience: Audience | None = None,
    ) -> list[Passage]:
        match = fts_query(query, broad=broad)
        table = self._table(collection)
        vector = await self._query_vector(meaning or query)
        if vector is not None:
            return await self._hybrid_search(
                collection, match, vector, limit=limit, corpus=corpus, audience=audience
            )

        def run(db: sqlite3.Connection) -> list[Passage]:
            if not self._indexed(db, collection):
                raise CollectionNotIndexedError(collection=collection.name, reason="not indexed")
            if match is None:
                return []
            try:
                rows = self._search_rows(
                    db,
                    table,
                    match,
                    limit,
                    narrowing=self._narrowing(collection, db),
                    counts=self._phrase_counts(collection),
                    analysis=self._analysis[db],
                    hidden=self._hidden(db, collection, audience),
                )
            except sqlite3.Error as exc:
                if self._missing(db, collection, exc):
                    raise CollectionNotIndexedError(collection=collection.name, reason="not indexed") from exc
                raise
            # Each passage's analysis, stored when it was indexed, goes to the text caches: the
            # graph then reads it instead of analysing the text again.
            for r in rows:
                offer(r[3], r[5], r[7])
            # Validated as they are built: pydantic's compiled validator is faster than
            # ``model_construct`` (2.9 against 7.3 µs a passage, 64 a question at 8 collections).
            return [
                Passage(
                    id=r[0],
                    collection=collection.name,
                    doc_id=r[1],
                    source=r[2],
                    title=r[3],
                    url=r[4],
                    text=r[5],
                    score=float(r[6]),
                )
                for r in rows
            ]

        try:
            return await self._run_read([collection], run)
        except sqlite3.Error as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc

    async def _query_vector(self, text: str) -> Vectors | None:
        return await query_vector(self._embedder, text, self._on_embedding_failure)

    def _vectors_of(self, db: sqlite3.Connection, collection: Collection) -> "_Vectors | None":
        """The collection's passage vectors (one matrix, its rows' ids), read once per sync; ``None``
        when they are not of the configured embedder (indexed with another model, or none)."""
        assert self._embedder is not None
        found = db.execute(
            "SELECT indexed_at, embedder FROM collections WHERE name = ?", (collection.name,)
        ).fetchone()
        if found is None:
            return None
        indexed_at, model = found
        if not recorded_by(self._embedder, model):
            if collection.name not in self._warned:
                self._warned.add(collection.name)
                logger.warning(
                    "collection %s was indexed %s; searching it by words only until `confer index` "
                    "embeds it with %s",
                    collection.name,
                    f"with {model}" if model else "without embeddings",
                    self._embedder.model,
                )
            return None
        with self._matrix_lock:
            cached = self._matrices.get(collection.name)
            if cached is not None and cached[0] == indexed_at:
                return cached[1]
        single_threaded_blas()  # the product with the question's vector: see there
        rows = db.execute(
            "SELECT p.id, v.vector FROM vectors AS v JOIN passages AS p ON p.rowid = v.rowid "
            "WHERE v.collection = ? ORDER BY v.rowid",
            (collection.name,),
        ).fetchall()
        positions = tuple(pid for pid, _ in rows)
        dimensions = self._embedder.dimensions or (len(rows[0][1]) // 4 if rows else 0)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(
            len(rows), dimensions
        )
        vectors = _Vectors(
            ids={pid: i for i, pid in enumerate(positions)}, positions=positions, matrix=matrix
        )
        with self._matrix_lock:
            self._matrices[collection.name] = (indexed_at, vectors)
        return vectors

    def _corpus_stats(
        self, db: sqlite3.Connection, collections: Sequence[Collection], phrases: Sequence[str]
    ) -> CorpusStats:
        """bm25's statistics over these collections together: rows, tokens and each phrase's rows."""
        parts = []
        for collection in collections:
            if not self._indexed(db, collection):
                continue
            table = self._table(collection)
            try:
                averages = _averages(db, table)
                found = self._phrase_counts(collection).read(db, table, phrases) if phrases else None
            except sqlite3.OperationalError:
                continue  # dropped since: it no longer counts
            rows, tokens = _averages_totals(averages)
            hits = dict(zip(phrases, found[1], strict=True)) if found is not None else {}
            parts.append(CorpusStats(rows=rows, tokens=tokens, hits=hits))
        return combine_stats(parts)

    def _hybrid_rows(
        self,
        db: sqlite3.Connection,
        collection: Collection,
        match: str | None,
        vector: Vectors,
        *,
        limit: int,
        corpus: Sequence[Collection],
        audience: Audience | None = None,
    ) -> list[Passage]:
        """The collection's best ``limit`` passages by words (BM25) and its best ``limit`` by meaning
        (cosine), each scored both ways, the words with the corpus's statistics; not yet fused. Of
        the passages ``audience`` may read only: the others are neither ranked nor read."""
        table = self._table(collection)
        hidden = self._hidden(db, collection, audience)
        rows: list[tuple[Any, ...]] = []
        if match is not None:
            rows = self._search_rows(
                db,
                table,
                match,
                limit,
                narrowing=self._narrowing(collection, db),
                counts=self._phrase_counts(collection),
                analysis=self._analysis[db],
                hidden=hidden,
            )
        vectors = self._vectors_of(db, collection)
        cosines: dict[str, float] = {}
        if vectors is not None:
            ids, matrix = vectors.ids, vectors.matrix
            if len(ids):
                similarity = matrix @ vector
                if hidden is not None:
                    sql, params = hidden
                    left_out = [
                        ids[pid]
                        for (pid,) in db.execute(f"SELECT id FROM passages WHERE rowid IN ({sql})", params)  # noqa: S608
                        if pid in ids
                    ]
                    if left_out:
                        similarity[left_out] = -np.inf
                top = np.argpartition(-similarity, min(limit, len(ids) - 1))[:limit]
                wanted = [vectors.positions[i] for i in top if np.isfinite(similarity[i])]
                have = {r[0] for r in rows}
                missing = [pid for pid in wanted if pid not in have]
                stored = "analysis" if self._analysis[db] else "NULL"
                for start in range(0, len(missing), 500):
                    part = missing[start : start + 500]
                    rows += db.execute(
                        f"SELECT id, doc_id, source, title, url, text, 0.0, {stored} FROM passages "  # noqa: S608
                        f"WHERE collection = ? AND id IN ({','.join('?' * len(part))})",
                        (collection.name, *part),
                    ).fetchall()
                cosines = {r[0]: float(similarity[ids[r[0]]]) for r in rows if r[0] in ids}
        phrases = query_phrases(match) if match is not None else []
        stats = self._corpus_stats(db, corpus or (collection,), [p.text for p in phrases])
        for r in rows:
            offer(r[3], r[5], r[7])
        return [
            Passage(
                id=r[0],
                collection=collection.name,
                doc_id=r[1],
                source=r[2],
                title=r[3],
                url=r[4],
                text=r[5],
                lexical=bm25(phrases, stats, r[3], r[5], title_weight=TITLE_WEIGHT) if phrases else 0.0,
                semantic=cosines.get(r[0]),
            )
            for r in rows
        ]

    async def _hybrid_search(
        self,
        collection: Collection,
        match: str | None,
        vector: Vectors,
        *,
        limit: int,
        corpus: Sequence[Collection],
        audience: Audience | None,
    ) -> list[Passage]:
        def run(db: sqlite3.Connection) -> list[Passage]:
            if not self._indexed(db, collection):
                raise CollectionNotIndexedError(collection=collection.name, reason="not indexed")
            try:
                found = self._hybrid_rows(
                    db, collection, match, vector, limit=limit, corpus=corpus, audience=audience
                )
            except sqlite3.Error as exc:
                if self._missing(db, collection, exc):
                    raise CollectionNotIndexedError(collection=collection.name, reason="not indexed") from exc
                raise
            return fuse(found)[:limit]

        try:
            return await self._run(run)
        except sqlite3.Error as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc

    @staticmethod
    def _search_rows(
        db: sqlite3.Connection,
        table: str,
        match: str,
        limit: int,
        *,
        narrowing: "_Narrowing | None" = None,
        counts: "_PhraseCounts | None" = None,
        analysis: bool = True,
        hidden: "_Hidden | None" = None,
    ) -> list[tuple[Any, ...]]:
        """The top ``limit`` passages: ranked inside the FTS table first, then only those rows read
        from ``passages`` (joining before the limit read every matching passage: 3 × slower at
        200k passages). With ``counts``, rows with only common terms are left unscored (see
        ``_top_rows``). Without ``analysis`` (an index from before stored analyses that this
        connection could not add the column to), every row's analysis reads as absent. ``hidden``
        (``_hidden_rows``): rows the search's audience may not read, never ranked."""
        stored = "p.analysis" if analysis else "NULL"
        unseen, unseen_params = (f"AND {table}.rowid NOT IN ({hidden[0]})", hidden[1]) if hidden else ("", ())

        def select(expression: str) -> list[tuple[Any, ...]]:
            rows: list[tuple[Any, ...]] = db.execute(
                f"""WITH top AS (
                        SELECT rowid, bm25({table}, ?, 1.0) AS rank FROM {table}
                        WHERE {table} MATCH ? {unseen} ORDER BY rank LIMIT ?
                    )
                    SELECT p.id, p.doc_id, p.source, p.title, p.url, p.text, -top.rank, {stored}
                    FROM top JOIN passages AS p ON p.rowid = top.rowid ORDER BY top.rank""",  # noqa: S608
                (TITLE_WEIGHT, expression, *unseen_params, limit),
            ).fetchall()
            return rows

        return _top_rows(
            # row[6] is -top.rank, the score: keep it in step with the SELECT list above.
            db,
            table,
            match,
            limit,
            select,
            score=lambda row: float(row[6]),
            narrowing=narrowing,
            counts=counts,
        )

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        match = fts_query(query)
        vector = await self._query_vector(meaning or query)
        if vector is not None:
            return await self._hybrid_probe(collections, match, vector, audience)
        if match is None:
            return {}

        def run(db: sqlite3.Connection) -> dict[str, float]:
            best: dict[str, float] = {}
            for collection in collections:
                if not self._indexed(db, collection):
                    continue
                table = self._table(collection)
                hidden = self._hidden(db, collection, audience)
                unseen = f"AND {table}.rowid NOT IN ({hidden[0]})" if hidden else ""
                unseen_params = hidden[1] if hidden else ()

                def select(
                    expression: str,
                    table: str = table,
                    unseen: str = unseen,
                    unseen_params: tuple[str, ...] = unseen_params,
                ) -> list[tuple[Any, ...]]:
                    rows: list[tuple[Any, ...]] = db.execute(
                        f"SELECT -bm25({table}, ?, 1.0) AS score FROM {table} "  # noqa: S608
                        f"WHERE {table} MATCH ? {unseen} ORDER BY score DESC LIMIT 1",
                        (TITLE_WEIGHT, expression, *unseen_params),
                    ).fetchall()
                    return rows

                try:
                    # The best score is no guide to a search's limit-th: probes do not teach.
                    rows = _top_rows(
                        db,
                        table,
                        match,
                        1,
                        select,
                        score=lambda row: float(row[0]),
                        narrowing=self._narrowing(collection, db),
                        counts=self._phrase_counts(collection),
                        learn=False,
                    )
                except sqlite3.Error as exc:
                    if self._missing(db, collection, exc):
                        continue
                    raise
                if rows:
                    best[collection.name] = float(rows[0][0])
            return best

        try:
            return await self._run_read(collections, run, learn=False)
        except sqlite3.Error:
            return {}

    async def _hybrid_probe(
        self,
        collections: Sequence[Collection],
        match: str | None,
        vector: Vectors,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        """Each collection's best hybrid score, its few best passages by words and by meaning fused
        together with every other collection's: one scale for all of them."""

        def run(db: sqlite3.Connection) -> dict[str, float]:
            pool: list[Passage] = []
            for collection in collections:
                if not self._indexed(db, collection):
                    continue
                try:
                    pool += self._hybrid_rows(
                        db,
                        collection,
                        match,
                        vector,
                        limit=_PROBE_DEPTH,
                        corpus=collections,
                        audience=audience,
                    )
                except sqlite3.Error as exc:
                    if self._missing(db, collection, exc):
                        continue
                    raise
            return best_by_collection(pool)

        try:
            return await self._run(run)
        except sqlite3.Error:
            return {}

    async def sync_collection(
        self,
        collection: Collection,
        passages: Sequence[Passage],
        *,
        progress: ProgressCallback | None = None,
    ) -> SyncStats:
        table = self._table(collection)
        wanted = {p.id: p for p in passages}
        digests = {pid: digest_of(p) for pid, p in wanted.items()}
        version = fingerprint()
        embedded = await self._embed_for_sync(collection, wanted, digests, progress)
        vectors, model = embedded if embedded is not None else (None, None)

        def run(db: sqlite3.Connection) -> SyncStats:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
                    "title, text, tokenize='porter unicode61 remove_diacritics 2')"
                )
                recorded = db.execute(
                    "SELECT text_format FROM collections WHERE name = ?", (collection.name,)
                ).fetchone()
                earlier = (recorded[0] or 1) if recorded is not None else None
                existing: dict[str, int] = {}
                unanalysed: list[int] = []
                changed: list[int] = []  # wanted ids whose stored content is another: written anew
                for pid, rowid, current, *content in db.execute(
                    "SELECT id, rowid, analysis IS NOT NULL AND substr(analysis, 3, ?) = ?, "
                    "doc_id, source, title, url, text, access FROM passages WHERE collection = ?",
                    (len(version), version, collection.name),
                ):
                    if pid in wanted and content_digest(*content) != digests[pid]:
                        changed.append(rowid)
                        continue
                    existing[pid] = rowid
                    if not current and pid in wanted:
                        unanalysed.append(rowid)
                stale = [rowid for pid, rowid in existing.items() if pid not in wanted] + changed
                for rowid in stale:
                    db.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))  # noqa: S608
                    db.execute("DELETE FROM passages WHERE rowid = ?", (rowid,))
                    db.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
                added = 0
                for passage in wanted.values():
                    if passage.id in existing:
                        continue
                    access = readers_key(passage.readers)
                    if access is not None and passage.readers is not None:
                        db.executemany(
                            "INSERT OR IGNORE INTO access_readers (access, principal) VALUES (?, ?)",
                            [(access, name) for name in passage.readers],
                        )
                    cursor = db.execute(
                        "INSERT INTO passages "
                        "(id, collection, doc_id, source, title, url, text, analysis, access) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            passage.id,
                            collection.name,
                            passage.doc_id,
                            passage.source,
                            passage.title,
                            passage.url,
                            passage.text,
                            analyse(passage.title, passage.text),
                            access,
                        ),
                    )
                    db.execute(
                        f"INSERT INTO {table} (rowid, title, text) VALUES (?, ?, ?)",  # noqa: S608
                        (cursor.lastrowid, passage.title, passage.text),
                    )
                    existing[passage.id] = int(cursor.lastrowid or 0)
                    added += 1
                # Vectors of the configured embedder for every passage (new ones, and all of them
                # when the collection was embedded with another model or none); none without one.
                if vectors is not None:
                    db.executemany(
                        "INSERT OR REPLACE INTO vectors (rowid, collection, vector) VALUES (?, ?, ?)",
                        [(existing[pid], collection.name, blob) for pid, blob in vectors.items()],
                    )
                else:
                    db.execute("DELETE FROM vectors WHERE collection = ?", (collection.name,))
                # Passages indexed before analyses were stored, or with other analysis rules: the
                # same text, analysed now (searches analyse such passages as they read them).
                for rowid in unanalysed:
                    title, text = db.execute(
                        "SELECT title, text FROM passages WHERE rowid = ?", (rowid,)
                    ).fetchone()
                    db.execute(
                        "UPDATE passages SET analysis = ? WHERE rowid = ?", (analyse(title, text), rowid)
                    )
                # The generation changes when what the collection holds does (answers cached from it
                # are then stale): passages added, removed or changed, re-analysed, or another embedder.
                before = db.execute(
                    "SELECT embedder, text_format FROM collections WHERE name = ?", (collection.name,)
                ).fetchone()
                renewed = (
                    bool(added or stale or unanalysed) or before is None or before != (model, TEXT_FORMAT)
                )
                db.execute(
                    "INSERT INTO collections (name, indexed_at, embedder, text_format, generation) "
                    "VALUES (?, julianday('now'), ?, ?, 1) "
                    "ON CONFLICT (name) DO UPDATE SET indexed_at = excluded.indexed_at, "
                    "embedder = excluded.embedder, text_format = excluded.text_format, "
                    "generation = generation + ?",
                    (collection.name, model, TEXT_FORMAT, int(renewed)),
                )
                if stale:  # readers sets no passage holds any more
                    db.execute(
                        "DELETE FROM access_readers WHERE access NOT IN "
                        "(SELECT DISTINCT access FROM passages WHERE access IS NOT NULL)"
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            # After the commit, which writes FTS5's pending rows and averages record to its tables.
            _store_common_terms(db, collection.name)
            return SyncStats(
                added=added,
                removed=len(stale),
                unchanged=len(wanted) - added,
                earlier_format=earlier if earlier is not None and earlier < TEXT_FORMAT else None,
            )

        async with self._write_lock:
            try:
                return await self._run(run)
            except sqlite3.Error as exc:
                raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc

    async def _embed_for_sync(
        self,
        collection: Collection,
        wanted: dict[str, Passage],
        digests: dict[str, str],
        progress: ProgressCallback | None,
    ) -> tuple[dict[str, bytes], str] | None:
        """The vectors a sync must write, by passage id, embedded before its transaction (a slow
        model never holds the write lock): the passages without a vector of the configured model, or
        stored with other content than ``digests`` (by id) says; and the key the collection records
        for them. ``None`` without an embedder. Raises
        ``IndexingError`` if embedding fails."""
        embedder = self._embedder
        if embedder is None:
            return None

        def current(db: sqlite3.Connection) -> tuple[set[str], str | None]:
            row = db.execute("SELECT embedder FROM collections WHERE name = ?", (collection.name,)).fetchone()
            if row is None or not recorded_by(embedder, row[0]):
                return set(), None
            # A passage whose content changed under the same id needs a vector of its new content.
            ids = {
                pid
                for pid, *content in db.execute(
                    "SELECT p.id, p.doc_id, p.source, p.title, p.url, p.text, p.access FROM passages AS p "
                    "JOIN vectors AS v ON v.rowid = p.rowid WHERE p.collection = ?",
                    (collection.name,),
                )
                if pid in digests and content_digest(*content) == digests[pid]
            }
            return ids, str(row[0])

        try:
            embedded, recorded = await self._run(current)
        except sqlite3.Error as exc:
            raise IndexingError(collection=collection.name, reason=type(exc).__name__) from exc
        todo = [p for pid, p in wanted.items() if pid not in embedded]
        if progress is not None and len(todo) < len(wanted):
            progress(len(wanted) - len(todo))
        try:
            matrix = await embed_with_cache(
                embedder,
                self._vector_cache,
                [passage_text(p.title, p.text) for p in todo],
                progress=progress,
            )
        except EmbeddingError as exc:
            raise IndexingError(collection=collection.name, reason=f"embeddings: {exc.reason}") from exc
        # The vectors' own size, not the embedder's (an endpoint may not know it yet).
        key = embedder_key(embedder, matrix.shape[1]) if todo else recorded or embedder_key(embedder, 0)
        return {p.id: matrix[i].tobytes() for i, p in enumerate(todo)}, key

    async def passages_from_sources(self, collection: Collection, sources: Sequence[str]) -> list[Passage]:
        def run(db: sqlite3.Connection) -> list[Passage]:
            found: list[Passage] = []
            for source in sources:
                rows = db.execute(
                    "SELECT id, doc_id, title, url, text, access FROM passages "
                    "WHERE collection = ? AND source = ? ORDER BY rowid",
                    (collection.name, source),
                ).fetchall()
                found.extend(
                    Passage(
                        id=r[0],
                        collection=collection.name,
                        doc_id=r[1],
                        source=source,
                        title=r[2],
                        url=r[3],
                        text=r[4],
                        readers=_readers(db, r[5]),
                    )
                    for r in rows
                )
            return found

        try:
            return await self._run(run)
        except sqlite3.Error as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc

    async def drop_collection(self, collection: Collection) -> None:
        table = self._table(collection)

        def run(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(f"DROP TABLE IF EXISTS {table}")
                db.execute("DELETE FROM passages WHERE collection = ?", (collection.name,))
                db.execute("DELETE FROM vectors WHERE collection = ?", (collection.name,))
                db.execute("DELETE FROM collections WHERE name = ?", (collection.name,))
                db.execute(_COMMON_TERMS_SCHEMA)
                db.execute("DELETE FROM common_terms WHERE collection = ?", (collection.name,))
                db.execute("COMMIT")
                self._indexed_names.discard(collection.name)
            except BaseException:
                db.execute("ROLLBACK")
                raise

        async with self._write_lock:
            await self._run(run)

    async def generations(self, collections: Sequence[Collection]) -> dict[str, str]:
        names = [c.name for c in collections]

        def run(db: sqlite3.Connection) -> dict[str, str]:
            marks = ",".join("?" * len(names))
            rows = db.execute(
                f"SELECT name, generation FROM collections WHERE name IN ({marks})",  # noqa: S608
                names,
            ).fetchall()
            return {str(name): str(generation) for name, generation in rows}

        if not names:
            return {}
        try:
            return await self._run(run)
        except sqlite3.Error as exc:
            raise SearchUnavailableError(collection=names[0], reason=type(exc).__name__) from exc

    async def stats(self, collection: Collection) -> CollectionStats | None:
        def run(db: sqlite3.Connection) -> CollectionStats | None:
            if not self._indexed(db, collection):
                return None
            documents, passages = db.execute(
                "SELECT COUNT(DISTINCT doc_id), COUNT(*) FROM passages WHERE collection = ?",
                (collection.name,),
            ).fetchone()
            return CollectionStats(documents=documents, passages=passages)

        try:
            return await self._run(run)
        except sqlite3.Error as exc:
            raise SearchUnavailableError(collection=collection.name, reason=type(exc).__name__) from exc

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        return await meanings(self._embedder, self._vector_cache, texts, self._on_embedding_failure)

    async def health(self) -> bool:
        try:
            return await self._run(lambda db: db.execute("SELECT 1").fetchone() == (1,))
        except sqlite3.Error:
            return False

    async def close(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._loop_connection = None
        if self._embedder is not None:
            await self._embedder.close()
        if self._vector_cache is not None:
            self._vector_cache.close()


# Rows an audience may not read, as SQL for a ``rowid NOT IN (…)`` and its parameters.
_Hidden = tuple[str, tuple[str, ...]]


def _hidden_rows(collection: Collection, audience: Audience | None) -> _Hidden | None:
    """The collection's passages ``audience`` may not read: those with readers (``access``) of a set
    that does not name one of each person's principals. ``None`` for the operator. A collection
    without readers (files, sources without permissions) hides nothing, through the partial index
    on ``access``, at no cost to its searches."""
    constraints = None if audience is None else audience.constraints
    if constraints is None:
        return None
    readable = " INTERSECT ".join(
        f"SELECT access FROM access_readers WHERE principal IN ({','.join('?' * len(each))})"  # noqa: S608
        for each in constraints
    )
    sql = (
        "SELECT rowid FROM passages WHERE access IS NOT NULL AND collection = ? "  # noqa: S608
        f"AND access NOT IN ({readable})"
    )
    return sql, (collection.name, *(name for each in constraints for name in each))


def _readers(db: sqlite3.Connection, access: str | None) -> tuple[str, ...] | None:
    if access is None:
        return None
    rows = db.execute("SELECT principal FROM access_readers WHERE access = ? ORDER BY principal", (access,))
    return tuple(name for (name,) in rows)


def _add_access_column(db: sqlite3.Connection) -> bool:
    """Who may read each passage (``retrieval.audience``): a readers set's key, ``NULL`` for everyone,
    and the sets' principals. An index from before readers were stored gains them; ``False`` when it
    cannot (a read-only one): its passages are everyone's, as they were."""
    _add_column(db, "passages", "access", "TEXT")
    try:
        db.executescript(_ACCESS_SCHEMA)
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorname != "SQLITE_READONLY" and "no such column" not in str(exc):
            raise
        return False
    return True


@dataclass(frozen=True)
class _Vectors:
    """A collection's passage vectors: one matrix, the passage id of each row, and each id's row."""

    ids: dict[str, int]
    positions: tuple[str, ...]
    matrix: Vectors


def _add_column(db: sqlite3.Connection, table: str, column: str, kind: str) -> None:
    """Add a column an index written by an earlier version lacks (not on a read-only index)."""
    if column in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
        return
    try:
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorname != "SQLITE_READONLY" and "duplicate column" not in str(exc):
            raise


def _averages_totals(averages: bytes) -> tuple[int, int]:
    """The FTS table's row count and its token count over all columns, from its averages record
    (varints in SQLite's format: the row count, then each column's token total)."""
    values: list[int] = []
    value = 0
    for byte in averages:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    if not values:
        return 0, 0
    return values[0], sum(values[1:])


def _add_analysis_column(db: sqlite3.Connection) -> bool:
    """An index written before analyses were stored gains the column (empty: its passages are
    analysed as searches read them, and stored at the collection's next sync). ``False`` when the
    column is missing and cannot be added (a read-only index): such an index is searched as before,
    its passages analysed as they are read."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(passages)")}
    if "analysis" in columns:
        return True
    try:
        db.execute("ALTER TABLE passages ADD COLUMN analysis TEXT")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorname == "SQLITE_READONLY":
            return False
        if "duplicate column" not in str(exc):  # another connection added it first
            raise
    return True


class _Narrowing:
    """How a large collection's limit-th score compares with its searches' rarest phrase's idf: the
    lowest of the last few ratios is the next search's guess, so a corpus whose results score high
    leaves more out and one whose results score low falls back less."""

    def __init__(self) -> None:
        self._ratios: tuple[float, ...] = ()

    @property
    def guess(self) -> float:
        return min(self._ratios, default=_FIRST_GUESS)

    def observe(self, ratio: float) -> None:
        # A new tuple each time: a thread reading the guess never sees one half-changed.
        self._ratios = (*self._ratios[1 - _RATIOS_KEPT :], ratio)


def _top_rows(
    db: sqlite3.Connection,
    table: str,
    match: str,
    limit: int,
    select: Callable[[str], list[T]],
    *,
    score: Callable[[T], float],
    narrowing: _Narrowing | None,
    counts: "_PhraseCounts | None" = None,
    learn: bool = True,
) -> list[T]:
    """``select(match)``, with rows that contain only common phrases of ``match`` left unscored
    where the result shows they could not have ranked. Most of a search is BM25 scoring every
    matching row, and most matching rows are there for a word or two that cannot lift them into the
    top ``limit``.

    With ``counts``, the phrases in half the rows or more, whose idf bm25 clamps to 1e-6, are left
    out first (``_informative_match``): the rows kept score what they would, less those phrases'
    share (under 2.2e-6 a phrase), and come in the same order but where two scores lie that close.
    With ``narrowing`` too (a large collection), the rows that contain only the most common of the
    phrases left, by the guess at the limit-th score, are not scored either, which changes no row,
    order or score. Both lanes of a collection (``narrowing`` or not) give the same rows and scores.
    """
    if narrowing is None:
        informative = _informative_match(db, table, match, counts) if counts is not None else None
        if informative is not None:
            expression, ceiling = informative
            kept = select(expression)
            if len(kept) == limit and score(kept[-1]) > ceiling:
                return kept
        return select(match)
    db.execute("BEGIN")  # the phrase counts and the queries read one snapshot
    try:
        informative = _informative_match(db, table, match, counts) if counts is not None else None
        base = match if informative is None else informative[0]
        phrases = base.split(" OR ")  # fts_query's form: quoted phrases, OR-ed
        idf = _phrase_idfs(db, table, phrases, counts) if len(phrases) > 1 else None
        rows: list[T] | None = None
        narrowed = None if idf is None else _narrowed_match(base, phrases, idf, narrowing.guess)
        if narrowed is not None:
            expression, ceiling = narrowed
            rows = select(expression)
            if len(rows) < limit or score(rows[-1]) <= ceiling:
                rows = None
        if rows is None:
            rows = select(base)
        if informative is not None and (len(rows) < limit or score(rows[-1]) <= informative[1]):
            rows = select(match)
        if learn and idf is not None and len(rows) == limit:
            narrowing.observe(score(rows[-1]) / max(idf))
        return rows
    finally:
        db.execute("COMMIT")


def _phrase_idfs(
    db: sqlite3.Connection, table: str, phrases: Sequence[str], counts: "_PhraseCounts | None" = None
) -> list[float] | None:
    """Each phrase's idf as bm25 computes it, from the table's row count and the phrase's count of
    matching rows (clamped to 1e-6 for a phrase in half the rows or more); None for an empty table.
    Counted anew, or read from ``counts`` where it holds them."""
    found = (counts or _PhraseCounts()).read(db, table, phrases)
    if found is None:
        return None
    rows, hits = found
    idf = [math.log((rows - n + 0.5) / (n + 0.5)) for n in hits]
    return [value if value > 0 else _CLAMPED_IDF for value in idf]


def _informative_match(
    db: sqlite3.Connection, table: str, match: str, counts: "_PhraseCounts"
) -> tuple[str, float] | None:
    """``match`` without the phrases that bm25 weighs next to nothing, and the most a row with
    only those can score; None if it has none such, or nothing else.

    A phrase in half the table's rows or more has its idf clamped to 1e-6, so it adds less than
    1e-6 × (k1 + 1) to any row's score, while every row it alone matches must still be scored
    (and all of a common phrase's occurrences read): about half of a search of a small collection
    whose question has a few common words."""
    phrases = match.split(" OR ")  # fts_query's form: quoted phrases, OR-ed
    if len(phrases) < 2:
        return None
    clamped = counts.clamped(db, table, phrases)
    if not clamped or len(clamped) == len(phrases):
        return None
    kept = [phrase for phrase in phrases if phrase not in clamped]
    # The margin covers rounding: bm25 sums in floating point.
    return " OR ".join(kept), len(clamped) * _BM25_K1_PLUS_1 * _CLAMPED_IDF * (1 + 1e-9)


class _PhraseCounts:
    """How many rows of one collection's FTS table hold each phrase searched for: what bm25's idf
    is made of, kept between searches while the table's averages record (its row count and token
    totals, which every write to the table changes) stays the same, instead of counted for every
    search. A table written anew to the very same record holds the same texts.

    With them, the collection's common terms as its last sync stored them (``_store_common_terms``),
    if they are of this record: the phrases a search must count to know which bm25 clamps. Where
    there are none for the record (an older index, or a search between a sync's commit and the
    storing of its terms), they are looked for again at most every ``_TERMS_RECHECK_SECONDS``.

    A search that reads the record before a write and counts after it keeps counts of the new
    texts under the old record: the next search reads the new record and starts again."""

    def __init__(self, collection: str | None = None) -> None:
        self._collection = collection
        # The averages record, its row count, the phrase counts, the common terms of that record and
        # when they were read: one tuple, replaced whole, so a thread never reads a record with
        # another's counts.
        self._state: tuple[bytes, int, dict[str, int], frozenset[str] | None, float] = (
            b"",
            0,
            {},
            None,
            -math.inf,
        )

    def _current(
        self, db: sqlite3.Connection, table: str
    ) -> tuple[int, dict[str, int], frozenset[str] | None] | None:
        averages = _averages(db, table)
        rows = _row_count(averages)
        if not rows:
            return None
        state = self._state
        record, _, counts, common, read_at = state
        if record != averages:
            counts, common, read_at = {}, None, -math.inf
        elif len(counts) > _COUNTS_KEPT:
            counts = {}
        now = time.monotonic()
        if self._collection is not None and common is None and now - read_at > _TERMS_RECHECK_SECONDS:
            common, read_at = _stored_common_terms(db, self._collection, averages), now
        if counts is not state[2] or read_at != state[4]:
            self._state = (averages, rows, counts, common, read_at)
        return rows, counts, common

    @staticmethod
    def _count(db: sqlite3.Connection, table: str, counts: dict[str, int], phrases: Sequence[str]) -> None:
        unknown = [phrase for phrase in dict.fromkeys(phrases) if phrase not in counts]
        if unknown:
            each = f"(SELECT count(*) FROM {table} WHERE {table} MATCH ?)"  # noqa: S608
            counted = db.execute("SELECT " + ", ".join(each for _ in unknown), unknown).fetchone()
            counts.update(zip(unknown, counted, strict=True))

    def read(
        self, db: sqlite3.Connection, table: str, phrases: Sequence[str]
    ) -> tuple[int, list[int]] | None:
        """The table's row count and each phrase's count of rows holding it; None for an empty
        table. Phrases not counted under the current record are counted in one query."""
        current = self._current(db, table)
        if current is None:
            return None
        rows, counts, _ = current
        self._count(db, table, counts, phrases)
        return rows, [counts[phrase] for phrase in phrases]

    def clamped(self, db: sqlite3.Connection, table: str, phrases: Sequence[str]) -> frozenset[str]:
        """The phrases in half the table's rows or more, counted: of a collection whose common terms
        are stored, only the phrases whose word stems to one of them (in English, as FTS5's porter
        stems: the few words it stems otherwise are only not left out); of any other, all."""
        current = self._current(db, table)
        if current is None:
            return frozenset()
        rows, counts, common = current
        candidates = phrases if common is None else [p for p in phrases if _fts_token(p) in common]
        self._count(db, table, counts, candidates)
        return frozenset(phrase for phrase in candidates if 2 * counts[phrase] >= rows)


@lru_cache(maxsize=1 << 16)
def _fts_token(phrase: str) -> str:
    """The token FTS5 reads for one of ``fts_query``'s quoted words, as near as Snowball's Porter
    stemmer gets (FTS5's follows a later revision of the algorithm); "" for a prefix phrase."""
    word = phrase.strip('"')
    if phrase.endswith("*") or not word.isascii():
        return ""
    token: str = _porter().stemWord(word.lower())
    return token


@lru_cache(maxsize=1)
def _porter() -> Any:
    return snowballstemmer.stemmer("porter")


def _averages(db: sqlite3.Connection, table: str) -> bytes:
    """The FTS table's averages record (row 1 of its ``_data`` table: its row count and token
    totals); empty for an empty table."""
    found = db.execute(f'SELECT block FROM "{table.strip(chr(34))}_data" WHERE id = 1').fetchone()  # noqa: S608
    return bytes(found[0]) if found is not None and found[0] else b""


_COMMON_TERMS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS common_terms "
    "(collection TEXT PRIMARY KEY, averages BLOB NOT NULL, terms TEXT NOT NULL)"
)


def _store_common_terms(db: sqlite3.Connection, collection: str) -> None:
    """Store the collection's terms in half its rows or more (FTS5's tokens, read from its
    vocabulary), with the averages record they are of, in a transaction of its own after a sync's
    (nothing is read again if the record has not changed). Searches do without them where this
    fails: they count every phrase of their query instead."""
    table = f'"fts_{collection}"'
    vocabulary = f'temp."vocab_{collection}"'
    create = f"CREATE VIRTUAL TABLE {vocabulary} USING fts5vocab(main, 'fts_{collection}', 'row')"
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_COMMON_TERMS_SCHEMA)
            averages = _averages(db, table)
            stored = db.execute(
                "SELECT averages FROM common_terms WHERE collection = ?", (collection,)
            ).fetchone()
            if stored is None or bytes(stored[0]) != averages:
                db.execute(create)
                try:
                    found = db.execute(
                        f"SELECT term FROM {vocabulary} WHERE doc * 2 >= ?",  # noqa: S608
                        (_row_count(averages) or 0,),
                    )
                    common = " ".join(term for (term,) in found)
                finally:
                    db.execute(f"DROP TABLE {vocabulary}")
                db.execute(
                    "INSERT INTO common_terms (collection, averages, terms) VALUES (?, ?, ?) ON CONFLICT "
                    "(collection) DO UPDATE SET averages = excluded.averages, terms = excluded.terms",
                    (collection, averages, common),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    except sqlite3.Error:
        logger.warning("common terms not stored", extra={"collection": collection}, exc_info=True)


def _stored_common_terms(db: sqlite3.Connection, collection: str, averages: bytes) -> frozenset[str] | None:
    """The collection's common terms if its last sync stored them for this averages record."""
    try:
        row = db.execute(
            "SELECT averages, terms FROM common_terms WHERE collection = ?", (collection,)
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # an index no sync of this version has written
            return None
        raise
    if row is None or bytes(row[0]) != averages:
        return None
    return frozenset(str(row[1]).split())


def _narrowed_match(
    match: str, phrases: Sequence[str], idf: Sequence[float], guess: float
) -> tuple[str, float] | None:
    """``match`` restricted to the rows that contain one of its rarer phrases, and the most a row
    with none of them can score; None if no phrase is common enough to leave out under the guess
    at the limit-th score (``guess`` × the highest idf).

    FTS5's bm25 scores a row by every phrase of the expression, and the phrases under a NOT add
    exactly 0.0 to the rows it lets through, so ``(match) NOT ((common) NOT (rare))`` gives the rows
    that contain a rare phrase the very scores (and, ties included, the order) ``match`` gives them,
    and scores no other row. A row left out contains only common phrases, so scores less than the
    sum of their ceilings (idf × (k1 + 1)); if the limit-th row kept scores more, none was missed."""
    budget = guess * max(idf)
    common: set[int] = set()
    ceiling = 0.0
    for index in sorted(range(len(phrases)), key=idf.__getitem__)[:-1]:
        if ceiling + _BM25_K1_PLUS_1 * idf[index] >= budget:
            break
        ceiling += _BM25_K1_PLUS_1 * idf[index]
        common.add(index)
    if not common:
        return None
    left_out = " OR ".join(p for i, p in enumerate(phrases) if i in common)
    rare = " OR ".join(p for i, p in enumerate(phrases) if i not in common)
    # The margin covers rounding: bm25 sums in floating point.
    return f"({match}) NOT (({left_out}) NOT ({rare}))", ceiling * (1 + 1e-9)


def _row_count(averages: bytes) -> int | None:
    """The row count bm25 reads for its idf: the first varint (SQLite's format) of the FTS table's
    averages record (row 1 of its ``_data`` table); None if there is none."""
    value = 0
    for position, byte in enumerate(averages[:9]):
        if position == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def build_embedded_backend(
    data_dir: Path,
    *,
    embedder: Embedder | None = None,
    vector_cache: VectorCache | None = None,
    on_embedding_failure: Callable[[str], None] | None = None,
) -> EmbeddedBackend:
    """The default backend: a SQLite file under ``data_dir`` (created if needed); with ``embedder``,
    searches by words and meaning. Raises ``DataDirError`` naming the folder when it cannot be
    created, or when it holds no index yet and cannot be written (an index that exists may be read
    from a read-only folder)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(path=data_dir.absolute(), reason=exc.strerror or type(exc).__name__) from None
    path = data_dir / DATABASE_NAME
    if not path.exists() and not os.access(data_dir, os.W_OK):
        raise DataDirError(path=data_dir.absolute(), reason="not writable")
    return EmbeddedBackend(
        path=path, embedder=embedder, vector_cache=vector_cache, on_embedding_failure=on_embedding_failure
    )
