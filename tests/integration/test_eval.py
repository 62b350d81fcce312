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
        (
            "p4",
            "Adriana Trigiani",
            "Adriana Trigiani is a best-selling novelist and filmmaker from Virginia.",
        ),
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
    {
        "id": "q4",
        "question": "Which state is the director of the romantic comedy Big Stone Gap from?",
        "answer": "Virginia",
        "type": "bridge",
        "gold_ids": ["f3", "p4"],
        "gold_collections": ["film_tv", "people"],
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
    assert set(report) == {
        "overall",
        "by_type",
        "baseline",
        "questions",
        "not_found",
        "verdicts",
        "faithfulness",
    }
    # With its gold paragraphs hidden, no other paragraph names a question's people or film: every
    # question must get a "not found"; with them present, none may.
    assert report["not_found"] == {
        "questions": 4,
        "not_found_without_evidence": 1.0,
        "not_found_when_answerable": 0.0,
        "by_type": {
            kind: {"not_found_without_evidence": 1.0, "not_found_when_answerable": 0.0}
            for kind in ("bridge", "comparison")
        },
    }
    # No question of this set has a yes/no gold, and no verdict is stated on any other.
    assert report["verdicts"]["stated_elsewhere"] == 0
    assert report["questions"] == 4 and set(report["by_type"]) == {"bridge", "comparison"}
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
    assert {p.name for p in out.iterdir()} == {
        "report.json",
        "report.md",
        "questions.jsonl",
        "recall.png",
        "latency.png",
    }
    assert "one-index baseline" in (out / "report.md").read_text()
    assert 'Saying "not found"' in (out / "report.md").read_text()
    assert "Research rounds per question" in (out / "report.md").read_text()
    details = {
        line["id"]: line for line in map(json.loads, (out / "questions.jsonl").read_text().splitlines())
    }
    assert set(details) == {"q1", "q2", "q3", "q4"}
    # The director is named only inside the film's paragraph: a second round finds her.
    bridge = details["q4"]
    assert bridge["retrieved"][:2] == ["f3", "p4"]
    assert len(bridge["rounds"]) == 2
    assert bridge["rounds"][1]["entities"] == ["Adriana Trigiani"]
    assert bridge["rounds"][1]["collections"] == ["people"]
    assert bridge["gold_ids"] == ["f3", "p4"] and bridge["type"] == "bridge"
    stats = json.loads((out / "report.json").read_text())["details"]["rounds"]
    assert stats["latency_by_round"]["2"]["questions"] >= 1
    faithfulness = report["faithfulness"]  # graded from how each case was built, not by the verifier
    assert faithfulness["true"]["total"] >= 6
    for kind in ("number", "name", "quantifier"):
        assert faithfulness[kind]["total"] > 0 and faithfulness[kind]["slipped"] == 0, kind
    assert "| negation |" in (out / "report.md").read_text()
    assert faithfulness["true"]["kept"] == faithfulness["true"]["total"]


def test_eval_of_a_missing_split_is_bad_input(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(dataset), "--split", "test"]) == 2
    assert "questions_test.jsonl: not found" in capsys.readouterr().err
    assert main(["eval", str(dataset / "nope")]) == 2


def test_eval_conversations_builds_followups_and_compares_with_the_written_question(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    titles = {"q1": ["Annie Morton", "Terry Richardson"], "q2": ["Ed Wood (film)", "Ed Wood"]}
    rows = [{**q, "gold_titles": titles.get(str(q["id"]), [])} for q in QUESTIONS]
    (dataset / "questions_dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    assert main(["eval", str(dataset), "--conversations", "--json", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["overall"]["questions"] == 2
    report = json.loads((out / "conversations.json").read_text())
    by_id = {row["id"]: row for row in report["questions"]}
    assert by_id["q1"]["followup"] == "And Terry Richardson?"
    assert by_id["q1"]["standalone"] == by_id["q1"]["written"] == "Who is older, Terry Richardson?"
    assert by_id["q1"]["gold"] == ["p2"]  # the follow-up needs the other side's passage
    assert by_id["q2"]["followup"] == "Who directed the 1994 biographical film it?"
    assert by_id["q2"]["standalone"] == "Who directed the 1994 biographical film Ed Wood?"
    assert "f2" in by_id["q2"]["followup_ranked"][:5]
    assert summary["by_type"]["comparison"]["followup_r@5"] == 100.0
    assert "| 2 | all |" in (out / "conversations.md").read_text()
