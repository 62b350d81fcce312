"""``retrieval.scoring``: FTS5's bm25 reproduced with the corpus's statistics, and the hybrid fusion."""

import sqlite3

import pytest

from retrieval.backends.embedded import TITLE_WEIGHT, _averages, _averages_totals, fts_query
from retrieval.passages import Passage
from retrieval.scoring import CorpusStats, bm25, combine_stats, fts_tokens, fuse, query_phrases

ROWS = [
    ("Parental leave", "Employees get 20 weeks of paid parental leave, split into two blocks if they wish."),
    ("Time off", "Everyone gets 27 days of paid time off per year, plus public holidays."),
    ("On-call", "The primary on-call engineer is paged first and must acknowledge within 5 minutes."),
    ("Security keys", "Report a lost or stolen security key to the security team at once."),
    ("Café crème", "Naïve résumés of the café's leave policy, with diacritics."),
]


def _table(rows: list[tuple[str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(title, text, tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO t (title, text) VALUES (?, ?)", rows)
    db.commit()  # FTS5 writes its averages record (rows and tokens) when the transaction ends
    return db


def _stats(db: sqlite3.Connection, phrases: list[str]) -> CorpusStats:
    rows, tokens = _averages_totals(_averages(db, '"t"'))
    hits = {p: db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (p,)).fetchone()[0] for p in phrases}
    return CorpusStats(rows=rows, tokens=tokens, hits=hits)


@pytest.mark.parametrize(
    "query", ["paid leave weeks", "who acknowledges the page", "lost security key", "cafe leave", "résumé"]
)
def test_bm25_matches_fts5_under_the_same_statistics(query: str) -> None:
    db = _table(ROWS)
    match = fts_query(query)
    assert match is not None
    phrases = query_phrases(match)
    stats = _stats(db, [p.text for p in phrases])
    expected = dict(
        db.execute("SELECT rowid, -bm25(t, ?, 1.0) FROM t WHERE t MATCH ?", (TITLE_WEIGHT, match)).fetchall()
    )
    assert expected
    for rowid, (title, text) in enumerate(ROWS, 1):
        ours = bm25(phrases, stats, title, text, title_weight=TITLE_WEIGHT)
        assert ours == pytest.approx(expected.get(rowid, 0.0), rel=1e-9, abs=1e-12)


def test_corpus_statistics_of_two_tables_score_as_one_table_would() -> None:
    first, second = ROWS[:3], ROWS[3:]
    match = fts_query("paid leave security")
    assert match is not None
    phrases = query_phrases(match)
    texts = [p.text for p in phrases]
    combined = combine_stats([_stats(_table(first), texts), _stats(_table(second), texts)])
    whole = _table(ROWS)
    expected = dict(
        whole.execute(
            "SELECT rowid, -bm25(t, ?, 1.0) FROM t WHERE t MATCH ?", (TITLE_WEIGHT, match)
        ).fetchall()
    )
    for rowid, (title, text) in enumerate(ROWS, 1):
        ours = bm25(phrases, combined, title, text, title_weight=TITLE_WEIGHT)
        assert ours == pytest.approx(expected.get(rowid, 0.0), rel=1e-9, abs=1e-12)


def test_tokens_fold_case_and_diacritics_and_stem_like_fts5() -> None:
    assert fts_tokens("Naïve Résumés, RUNNING!") == ("naiv", "resum", "run")


def _passage(pid: str, lexical: float | None, semantic: float | None) -> Passage:
    return Passage(
        id=pid,
        collection="c",
        doc_id=pid,
        source=pid,
        title=pid,
        text=pid,
        lexical=lexical,
        semantic=semantic,
    )


def test_fuse_weighs_words_and_meaning_equally_on_their_ranges() -> None:
    fused = fuse(
        [
            _passage("words", lexical=10.0, semantic=0.20),
            _passage("meaning", lexical=0.0, semantic=0.80),
            _passage("both", lexical=8.0, semantic=0.70),
        ]
    )
    assert [p.id for p in fused] == ["both", "meaning", "words"]
    assert fused[0].score == pytest.approx(0.5 * 0.8 + 0.5 * (0.5 / 0.6))
    assert fused[-1].score == pytest.approx(0.5)


def test_a_passage_found_only_by_words_counts_as_least_similar() -> None:
    fused = fuse(
        [
            _passage("words only", lexical=1.0, semantic=None),
            _passage("b", lexical=0.5, semantic=0.3),
            _passage("c", lexical=0.2, semantic=0.7),
        ]
    )
    scores = {p.id: p.score for p in fused}
    assert scores["words only"] == pytest.approx(0.5)  # its meaning counts as b's, the lowest
    assert scores["b"] == pytest.approx(0.5 * 0.3 / 0.8)
    assert scores["c"] == pytest.approx(0.5)
