"""A small evaluation runs end to end through ``confer eval`` (the full benchmark is in README)."""

import json
from pathlib import Path

import pytest

from bot.cli import main

PARAGRAPHS = {
    "people": [
        (
            "p1",
            "Annie Morton",
            "Annie Morton (born October 8, 1970) is an American model born in Pennsylvania.",
        ),
        (
            "p2",
            "Terry Richardson",
            "Terrence Richardson (born August 14, 1965) is an American fashion photographer.",
        ),
        ("p3", "Ed Wood", "Edward Davis Wood Jr. was an American filmmaker, actor and author."),
    ],
    "film_tv": [
        (
            "f1",
            "Doctor Strange (2016 film)",
            "Doctor Strange is a 2016 superhero film directed by Scott Derrickson.",
        ),
        ("f2", "Ed Wood (film)", "Ed Wood is a 1994 biographical film directed by Tim Burton."),
        (
            "f3",
            "Big Stone Gap (film)",
            "Big Stone Gap is a 2014 romantic comedy film directed by Adriana Trigiani.",
        ),
    ],
}
QUESTIONS = [
    {
        "id": "q1",
        "question": "Who is older, Annie Morton or Terry Richardson?",
        "answer": "Terry Richardson",
        "type": "comparison",
        "gold_ids": ["p1", "p2"],
        "gold_collections": ["people"],
    },
    {
        "id": "q2",
        "question": "Who directed the 1994 biographical film Ed Wood?",
        "answer": "Tim Burton",
        "type": "bridge",
        "gold_ids": ["f2", "p3"],
        "gold_collections": ["film_tv", "people"],
    },
    {
        "id": "q3",
        "question": "Which 2016 superhero film did Scott Derrickson direct?",
        "answer": "Doctor Strange",
        "type": "bridge",
        "gold_ids": ["f1"],
        "gold_collections": ["film_tv"],
    },
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "mini"
    (root / "collections").mkdir(parents=True)
    lines = ["collections:"]
    for name, rows in PARAGRAPHS.items():
        (root / "collections" / f"{name}.jsonl").write_text(
            "\n".join(json.dumps({"id": i, "title": t, "text": x}) for i, t, x in rows) + "\n"
        )
        lines += [f"  - name: {name}", f"    title: {name}", f"    sources: [collections/{name}.jsonl]"]
    (root / "collections.yaml").write_text("\n".join(lines) + "\n")
    (root / "questions_dev.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return root


def test_eval_reports_the_contract_fields_and_writes_its_report(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "report"
    assert main(["eval", str(dataset), "--json", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"overall", "by_type", "baseline", "questions", "not_found"}
    # With its gold paragraphs hidden, no other paragraph names a question's people or film: every
    # question must get a "not found"; with them present, none may.
    assert report["not_found"] == {
        "questions": 3,
        "not_found_without_evidence": 1.0,
        "not_found_when_answerable": 0.0,
    }
    assert report["questions"] == 3 and set(report["by_type"]) == {"bridge", "comparison"}
    fields = {
        "recall_at_2",
        "recall_at_5",
        "recall_at_10",
        "routing_recall",
        "collections_per_question",
        "gold_cited",
        "citation_validity",
        "supported_sentences",
        "answer_contains",
        "p50_seconds",
        "p95_seconds",
    }
    assert fields <= set(report["overall"]) and fields <= set(report["baseline"]["overall"])
    overall = report["overall"]
    assert overall["citation_validity"] == 1.0 and overall["supported_sentences"] == 1.0
    assert overall["routing_recall"] == 1.0
    comparison = report["by_type"]["comparison"]
    assert comparison["recall_at_2"] == 1.0  # both people found by their own sub-queries
    assert report["baseline"]["overall"]["routing_recall"] is None
    assert 0 <= report["baseline"]["overall"]["recall_at_5"] <= 1
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "recall.png", "latency.png"}
    assert "one-index baseline" in (out / "report.md").read_text()
    assert 'Saying "not found"' in (out / "report.md").read_text()


def test_eval_of_a_missing_split_is_bad_input(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(dataset), "--split", "test"]) == 2
    assert "questions_test.jsonl: not found" in capsys.readouterr().err
    assert main(["eval", str(dataset / "nope")]) == 2
