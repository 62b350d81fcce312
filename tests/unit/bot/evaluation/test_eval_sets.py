"""The eval sets written from real public documents under evals/: each loads as `confer eval` loads
it, its held-out half is what `--split test` reads, and dev and test never share a question."""

import functools
import hashlib
from collections import Counter
from pathlib import Path

import pytest

from bot.evaluation.datasets import EvalQuestion, load_questions
from bot.evaluation.scoring import normalize_answer
from bot.terminal.cli import build_parser
from retrieval.collections import load_collections, resolve_sources

EVALS = Path(__file__).resolve().parents[4] / "evals"
SETS = ["sourcegraph-handbook", "plausible-docs", "meltano-handbook", "syncthing-docs"]


@functools.cache
def _normalized(path: Path) -> str:
    return normalize_answer(path.read_text(encoding="utf-8"))


def _both(name: str) -> tuple[list[EvalQuestion], list[EvalQuestion]]:
    return load_questions(EVALS / name, "dev"), load_questions(EVALS / name, "test")


@pytest.mark.parametrize("name", SETS)
def test_split_test_reads_the_held_out_half(name: str) -> None:
    args = build_parser().parse_args(["eval", str(EVALS / name), "--split", "test"])
    held_out = load_questions(args.dataset, args.split)
    dev, test = _both(name)
    assert [q.id for q in held_out] == [q.id for q in test]
    assert not {q.id for q in dev} & {q.id for q in test}
    assert not {normalize_answer(q.question) for q in dev} & {normalize_answer(q.question) for q in test}


@pytest.mark.parametrize("name", SETS)
def test_the_split_is_the_documented_stratified_one(name: str) -> None:
    """Within each type, ordered by the SHA-256 of the id, questions alternate dev, test, dev, …"""
    dev, test = _both(name)
    for kind in {q.type for q in dev + test}:
        ordered = sorted(
            (q for q in dev + test if q.type == kind), key=lambda q: hashlib.sha256(q.id.encode()).hexdigest()
        )
        assert {q.id for q in ordered[0::2]} == {q.id for q in dev if q.type == kind}
        assert {q.id for q in ordered[1::2]} == {q.id for q in test if q.type == kind}
    kinds = Counter(q.type for q in dev + test)
    assert set(kinds) == {"answerable", "unanswerable", "followup"} and sum(kinds.values()) >= 44


@pytest.mark.parametrize("name", SETS)
def test_gold_strings_come_from_the_gold_documents_of_the_gold_collections(name: str) -> None:
    config = load_collections(EVALS / name / "collections.yaml")
    files = {
        c.name: [p.relative_to(EVALS / name).as_posix() for p in resolve_sources(c, config)]
        for c in config.collections
    }
    dev, test = _both(name)
    for q in dev + test:
        if q.type == "unanswerable":
            assert not any(q.answers) and not q.gold_sources and not q.gold_collections, q.id
            continue
        assert q.answers and q.gold_sources, q.id
        assert (q.type == "followup") == bool(q.history), q.id
        holders = [[c for c, paths in files.items() if source in paths] for source in q.gold_sources]
        assert all(len(h) == 1 for h in holders), (q.id, holders)
        assert sorted({h[0] for h in holders}) == sorted(q.gold_collections), q.id
        texts = [_normalized(EVALS / name / s) for s in q.gold_sources]
        assert any(normalize_answer(a) in t for a in q.answers for t in texts), q.id
