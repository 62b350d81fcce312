"""The embedded backend shared by several processes: ``confer index`` (or an evaluation) in one,
``confer serve`` in another, both on the same SQLite file."""

import asyncio
import itertools
import math
import random
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from retrieval import text
from retrieval.analysis import analyse
from retrieval.backends import embedded
from retrieval.backends.embedded import (
    DATABASE_NAME,
    EmbeddedBackend,
    _informative_match,
    _narrowed_match,
    _phrase_idfs,
    _PhraseCounts,
    build_embedded_backend,
    fts_query,
)
from retrieval.collections import Collection, CollectionsConfig
from retrieval.errors import CollectionNotIndexedError
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import Passage
from retrieval.text import sentence_analysis


async def test_a_collection_indexed_or_dropped_elsewhere_is_seen_by_a_running_backend(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    people = sample_config.get("people")
    assert people is not None
    serving = build_embedded_backend(tmp_path / "data")
    indexer = build_embedded_backend(tmp_path / "data")
    try:
        with pytest.raises(CollectionNotIndexedError):
            await serving.search(people, "parental leave", limit=3)
        await index_collection(indexer, people, sample_config)
        hits = await serving.search(people, "parental leave", limit=3)
        assert hits and "parental" in hits[0].text.lower()
        assert set(await serving.probe([people], "parental leave")) == {"people"}

        await indexer.drop_collection(people)
        with pytest.raises(CollectionNotIndexedError):
            await serving.search(people, "parental leave", limit=3)
        assert await serving.probe([people], "parental leave") == {}
        assert await serving.stats(people) is None

        await index_collection(indexer, people, sample_config)
        assert await serving.search(people, "parental leave", limit=3)
        assert set(await serving.probe([people], "parental leave")) == {"people"}
    finally:
        await serving.close()
        await indexer.close()


async def _people_indexed_before_stored_analyses(config: CollectionsConfig, data: Path) -> Collection:
    """The people collection indexed into ``data``, then the file as an older Confer wrote it: no
    analysis column."""
    people = config.get("people")
    assert people is not None
    indexer = build_embedded_backend(data)
    try:
        await index_collection(indexer, people, config)
    finally:
        await indexer.close()
    with sqlite3.connect(data / DATABASE_NAME) as db:
        db.execute("ALTER TABLE passages DROP COLUMN analysis")
    return people


async def test_an_index_from_before_stored_analyses_is_read_and_analysed_at_its_next_sync(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    people = await _people_indexed_before_stored_analyses(sample_config, data)
    older = build_embedded_backend(data)
    try:
        text.forget_texts()
        hits = await older.search(people, "parental leave", limit=3)
        assert hits and "parental" in hits[0].text.lower()
        with sqlite3.connect(data / DATABASE_NAME) as db:
            assert db.execute("SELECT COUNT(*) FROM passages WHERE analysis IS NULL").fetchone()[0] > 0
        stats = await index_collection(older, people, sample_config)
        assert stats.added == 0 and stats.removed == 0
        with sqlite3.connect(data / DATABASE_NAME) as db:
            rows = db.execute("SELECT title, text, analysis FROM passages").fetchall()
        assert rows and all(stored == analyse(title, body) for title, body, stored in rows)
    finally:
        await older.close()


class CountingExecutor(ThreadPoolExecutor):
    """The backend's pool, counting the work handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def counting(backend: EmbeddedBackend) -> CountingExecutor:
    executor = CountingExecutor()
    backend._executor.shutdown()
    backend._executor = executor
    return executor


ZIPF_VOCABULARY = [f"w{rank}x" for rank in range(1500)]


def zipf_queries(count: int, *, seed: int, spans: tuple[int, ...], most: int) -> list[str]:
    """Queries of 2 to ``most`` distinct words, each query's drawn from the commonest words of the
    vocabulary, as many as one of ``spans`` (picked at random per query)."""
    rng = random.Random(seed)
    return [
        " ".join(rng.sample(ZIPF_VOCABULARY[: rng.choice(spans)], rng.randint(2, most))) for _ in range(count)
    ]


def zipf_passages(collection: str, count: int, seed: int = 3) -> list[Passage]:
    rng = random.Random(seed)
    vocabulary = ZIPF_VOCABULARY
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [
        Passage(
            id=f"p{i}",
            collection=collection,
            doc_id=f"d{i // 4}",
            source=f"s{i // 4}.md",
            title=" ".join(rng.choices(vocabulary, weights, k=rng.choice((2, 4)))),
            # Half the passages of one length: ties in score, which the order must keep too.
            text=" ".join(rng.choices(vocabulary, weights, k=40 if i % 2 else rng.randint(10, 90))),
        )
        for i in range(count)
    ]


async def test_a_quick_collection_is_searched_on_the_event_loop_and_a_slow_one_on_the_pool(
    sample_config: CollectionsConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Room for a garbage collector's pause in a busy test run (these searches take ~0.5 ms of CPU):
    # the lane, not the limits, is tested here (the loop's deadline has a test of its own).
    monkeypatch.setattr(embedded, "INLINE_LIMIT_SECONDS", 0.1)
    people = sample_config.get("people")
    assert people is not None
    indexer = build_embedded_backend(tmp_path / "data")
    await index_collection(indexer, people, sample_config)
    await indexer.close()
    queries = ["parental leave", "holiday allowance", "sick days", "remote work", "expenses", "pension"]
    path = tmp_path / "data" / DATABASE_NAME

    quick = EmbeddedBackend(path=path, quick_search_seconds=0.05)
    pool = counting(quick)
    try:
        first = await quick.search(people, queries[0], limit=3)  # not searched yet: on the pool
        handed_over = pool.submitted
        assert handed_over == 1
        found = await asyncio.gather(*(quick.search(people, q, limit=3) for q in queries))
        assert pool.submitted == handed_over  # quick (~0.4 ms): each ran where it was awaited
        assert await quick.probe([people], queries[1]) and pool.submitted == handed_over
        # An event loop in another thread does not share the loop's connection: it uses the pool.
        elsewhere: list[list[Passage]] = []
        other = threading.Thread(
            target=lambda: elsewhere.append(asyncio.run(quick.search(people, queries[1], limit=3)))
        )
        other.start()
        await asyncio.to_thread(other.join)
        assert elsewhere == [found[1]] and pool.submitted == handed_over + 1
    finally:
        await quick.close()

    slow = EmbeddedBackend(path=path, quick_search_seconds=0.0)
    pool = counting(slow)
    try:
        again = await asyncio.gather(*(slow.search(people, q, limit=3) for q in queries))
        assert pool.submitted >= len(queries)  # every search on the pool's threads
    finally:
        await slow.close()
    # Where a search runs changes nothing it finds.
    assert first == found[0] and again == found and sum(map(bool, found)) >= 4


async def test_a_search_too_long_for_the_event_loop_is_stopped_and_runs_on_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collection = Collection(name="zipf", title="Zipf", sources=("x",))
    # Every search counts as quick (up to 10 s of CPU): only the deadline sends one to the pool.
    backend = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=10.0)
    try:
        await backend.sync_collection(collection, zipf_passages("zipf", 3000))
        query = "w1x w2x w3x w5x w8x w13x"  # common words: thousands of rows to score
        expected = await backend.search(collection, query, limit=8)  # on the pool, then filed quick
        pool = counting(backend)
        # A deadline already passed: SQLite stops the search at its first progress check.
        monkeypatch.setattr(embedded, "INLINE_LIMIT_SECONDS", -1.0)
        assert await backend.search(collection, query, limit=8) == expected
        assert pool.submitted == 1  # run again, in full, on the pool
        # The pool's run filed the collection by its CPU time (quick, here): the loop's again.
        monkeypatch.setattr(embedded, "INLINE_LIMIT_SECONDS", 60.0)
        assert await backend.search(collection, query, limit=8) == expected
        assert pool.submitted == 1
        # A probe stopped on the loop runs on the pool, and so do later probes of as many
        # collections; searches stay on the loop.
        probed = await backend.probe([collection], query)
        assert probed == {"zipf": expected[0].score} and pool.submitted == 1
        monkeypatch.setattr(embedded, "INLINE_LIMIT_SECONDS", -1.0)
        assert await backend.probe([collection], query) == probed
        assert pool.submitted == 2
        monkeypatch.setattr(embedded, "INLINE_LIMIT_SECONDS", 60.0)
        assert await backend.probe([collection], query) == probed
        assert pool.submitted == 3
        assert await backend.search(collection, query, limit=8) == expected
        assert pool.submitted == 3
    finally:
        await backend.close()


class LockedConnection:
    """The loop's connection while another process holds a lock: every statement is refused at
    once (its busy timeout is 0), as SQLite refuses it."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.refused = 0

    def execute(self, *args: Any) -> Any:
        self.refused += 1
        error = sqlite3.OperationalError("database is locked")
        error.sqlite_errorcode = sqlite3.SQLITE_BUSY
        raise error


async def test_a_search_refused_a_lock_on_the_event_loop_runs_on_the_pool_instead(
    sample_config: CollectionsConfig, tmp_path: Path
) -> None:
    people = sample_config.get("people")
    assert people is not None
    backend = build_embedded_backend(tmp_path / "data")
    try:
        await index_collection(backend, people, sample_config)
        expected = await backend.search(people, "parental leave", limit=3)
        assert backend._loop_connection is not None  # opened once the collection was found quick
        locked = LockedConnection(backend._loop_connection)
        backend._loop_connection = locked  # type: ignore[assignment]
        backend._analysis[locked] = True  # type: ignore[index]
        pool = counting(backend)
        assert await backend.search(people, "parental leave", limit=3) == expected
        assert locked.refused == 1 and pool.submitted == 1  # refused at once, then run on the pool
        # A lock says nothing of the collection's size: it is still searched on the loop first.
        assert await backend.probe([people], "parental leave") == {"people": expected[0].score}
        assert locked.refused == 2 and pool.submitted == 2
        backend._loop_connection = locked.connection
    finally:
        await backend.close()


async def test_a_large_collection_narrowed_to_its_rarer_terms_ranks_and_scores_as_before(
    tmp_path: Path,
) -> None:
    """Searches of a collection on the slow lane leave rows with only common terms unscored when
    that provably changes nothing: every result, its order and its score equal the plain query's."""
    collection = Collection(name="zipf", title="Zipf", sources=("x",))
    passages = zipf_passages("zipf", 3000, seed=3)
    queries = zipf_queries(150, seed=3, spans=(20, 200, 1500), most=12)
    plain = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    narrowing = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=0.0)
    try:
        await plain.sync_collection(collection, passages)
        await narrowing.search(collection, queries[0], limit=8)  # found slow: narrowed from now on
        for query in queries:
            expected = await plain.search(collection, query, limit=8)
            assert await narrowing.search(collection, query, limit=8) == expected, query
            assert await narrowing.probe([collection], query) == await plain.probe([collection], query)
        # The shortcut was taken, not only the fallback to the plain query.
        db = sqlite3.connect(tmp_path / DATABASE_NAME)
        narrowed = 0
        for query in queries:
            match = fts_query(query)
            assert match is not None
            phrases = match.split(" OR ")
            idf = _phrase_idfs(db, '"fts_zipf"', phrases)
            assert idf is not None
            found = _narrowed_match(match, phrases, idf, 1.0)
            if found is not None:
                rows = EmbeddedBackend._search_rows(db, '"fts_zipf"', found[0], 8)
                narrowed += len(rows) == 8 and rows[-1][6] > found[1]
        db.close()
        assert narrowed >= len(queries) // 4
    finally:
        await plain.close()
        await narrowing.close()


async def test_a_narrowed_search_falls_back_when_a_common_term_could_outrank_the_rarer_ones(
    tmp_path: Path,
) -> None:
    """Eight long passages hold the rare word once; many short ones hold the common word. Left out
    of the candidates, the common word's passages would be missed: they score above the long ones."""
    collection = Collection(name="skewed", title="Skewed", sources=("x",))
    filler = [f"filler{i}" for i in range(300)]
    texts = [" ".join(["rareword", *filler]) for _ in range(8)]
    texts += ["commonword " * (1 + i % 4) + f"short{i}" for i in range(200)]
    texts += [f"other{i} words here" for i in range(1792)]
    passages = [
        Passage(id=f"p{i}", collection="skewed", doc_id=f"d{i}", source=f"s{i}.md", title=f"t{i}", text=text)
        for i, text in enumerate(texts)
    ]
    plain = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    narrowing = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=0.0)
    try:
        await plain.sync_collection(collection, passages)
        await narrowing.search(collection, "warm up", limit=8)
        expected = await plain.search(collection, "rareword commonword", limit=8)
        assert any("commonword" in p.text for p in expected)
        assert await narrowing.search(collection, "rareword commonword", limit=8) == expected
    finally:
        await plain.close()
        await narrowing.close()


async def test_words_in_half_a_collection_or_more_are_left_out_of_its_searches_where_no_ranking_changes(
    tmp_path: Path,
) -> None:
    """bm25 clamps the idf of a word in half the rows or more to 1e-6: without such words, a query
    finds the same top passages, in the same order, within millionths of the same scores, and
    does not score every row that a common word alone matches."""
    collection = Collection(name="zipf", title="Zipf", sources=("x",))
    passages = zipf_passages("zipf", 400, seed=5)
    queries = zipf_queries(120, seed=5, spans=(10, 100, 1500), most=10)
    backend = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    try:
        await backend.sync_collection(collection, passages)
        # The sync stored the words in half the passages or more, as FTS5 reads them.
        (stored,) = db.execute("SELECT terms FROM common_terms WHERE collection = 'zipf'").fetchone()
        rows = [set(f"{p.title} {p.text}".split()) for p in passages]
        in_half = {word for word in ZIPF_VOCABULARY if 2 * sum(word in row for row in rows) >= len(rows)}
        assert in_half and set(stored.split()) == in_half
        shortcuts = 0
        for query in queries:
            match = fts_query(query)
            assert match is not None
            # bm25 over every word of the query, of every row that has one.
            reference = EmbeddedBackend._search_rows(db, '"fts_zipf"', match, len(passages))
            scores = {row[0]: float(row[6]) for row in reference}
            found = await backend.search(collection, query, limit=8)
            assert len(found) == min(8, len(reference)), query
            eighth = float(reference[len(found) - 1][6])
            for passage in found:
                assert abs(passage.score - scores[passage.id]) < 1e-4, query
                assert scores[passage.id] > eighth - 1e-4, query  # in the top eight but for near ties
            for higher, lower in itertools.pairwise(found):
                assert scores[higher.id] > scores[lower.id] - 1e-4, query
            if len(reference) <= 8 or eighth - float(reference[8][6]) > 1e-4:
                assert {p.id for p in found} == {row[0] for row in reference[:8]}, query
            shortcuts += _informative_match(db, '"fts_zipf"', match, _PhraseCounts("zipf")) is not None
        assert shortcuts >= len(queries) // 4
    finally:
        db.close()
        await backend.close()


async def test_a_collection_written_anew_elsewhere_is_searched_by_its_new_common_words(
    tmp_path: Path,
) -> None:
    """What a running backend keeps between searches (phrase counts, common words) is of one
    state of the index: after another process rewrites the collection, a word that was in every
    passage and is now in one counts again, and lifts that passage to the top."""
    collection = Collection(name="notes", title="Notes", sources=("x",))

    def notes(alpha_in: int) -> list[Passage]:
        texts = [f"beta note{i}" if i < 9 else f"note{i} other words" for i in range(20)]
        texts[0] = "beta " + " ".join(f"filler{j}" for j in range(30))  # the longest beta passage
        return [
            Passage(
                id=f"p{i}-{alpha_in}",  # a passage's id changes with its text, as ingestion's do
                collection="notes",
                doc_id=f"d{i}",
                source=f"s{i}.md",
                title=f"Note {i}",
                text=("alpha " if i < alpha_in else "") + text,
            )
            for i, text in enumerate(texts)
        ]

    serving = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    indexing = EmbeddedBackend(path=tmp_path / DATABASE_NAME)
    try:
        await serving.sync_collection(collection, notes(alpha_in=20))
        # alpha is in every passage: left out, the beta passages rank by beta alone, the long one last.
        found = await serving.search(collection, "alpha beta", limit=3)
        assert len(found) == 3 and "p0-20" not in [p.id for p in found]
        await indexing.sync_collection(collection, notes(alpha_in=1))
        found = await serving.search(collection, "alpha beta", limit=3)
        assert found[0].id == "p0-1"  # the only passage with alpha, now a rare word
    finally:
        await serving.close()
        await indexing.close()


async def test_an_index_without_stored_common_words_is_searched_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index from before common words were stored (or whose sync could not store them) counts
    every word of a query instead of the few its common words point to: the same results. Once a
    sync elsewhere stores them, a running backend finds them at its next look."""
    collection = Collection(name="zipf", title="Zipf", sources=("x",))
    queries = zipf_queries(40, seed=9, spans=(300,), most=8)
    stored = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    try:
        await stored.sync_collection(collection, zipf_passages("zipf", 300, seed=9))
        expected = [await stored.search(collection, query, limit=8) for query in queries]
    finally:
        await stored.close()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.execute("DROP TABLE common_terms")
    db.close()
    older = EmbeddedBackend(path=tmp_path / DATABASE_NAME, quick_search_seconds=math.inf)
    try:
        assert [await older.search(collection, query, limit=8) for query in queries] == expected
        assert older._counts["zipf"]._state[3] is None  # no common words: every word counted
        indexer = EmbeddedBackend(path=tmp_path / DATABASE_NAME)
        try:
            # Passages unchanged (nothing written to the FTS table): the sync stores the terms alone.
            stats = await indexer.sync_collection(collection, zipf_passages("zipf", 300, seed=9))
            assert stats.added == stats.removed == 0
        finally:
            await indexer.close()
        monkeypatch.setattr(embedded, "_TERMS_RECHECK_SECONDS", 0.0)
        assert [await older.search(collection, query, limit=8) for query in queries] == expected
        assert older._counts["zipf"]._state[3]  # read at the next look
    finally:
        await older.close()


async def test_a_read_only_index_from_before_stored_analyses_is_still_searched(
    sample_config: CollectionsConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    people = await _people_indexed_before_stored_analyses(sample_config, data)
    # The file mounted read-only: the column cannot be added (tests run as root, who may write any
    # file, so the connections are opened read-only instead).
    connect = sqlite3.connect

    def read_only(path: Path, **options: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(f"file:{path}?mode=ro", uri=True, **options)
        return connection

    monkeypatch.setattr(sqlite3, "connect", read_only)
    reader = build_embedded_backend(data)
    try:
        text.forget_texts()
        hits = await reader.search(people, "parental leave", limit=3)
        assert hits and "parental" in hits[0].text.lower()
        assert sentence_analysis(hits[0].text)[0]  # analysed as it is read
    finally:
        await reader.close()
