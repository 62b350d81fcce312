"""A small evaluation runs end to end through ``confer eval`` (the full benchmark is in README)."""

import json
from pathlib import Path
from typing import Any

import pytest

from bot.terminal.cli import main

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
        "followups",
    }
    # With its gold paragraphs hidden, no other paragraph names a question's people or film: every
    # question must get a "not found"; with them present, none may. No question is unanswerable.
    assert report["not_found"] == {
        "questions": 4,
        "answerable": 4,
        "unanswerable": 0,
        "not_found_without_evidence": 1.0,
        "not_found_when_answerable": 0.0,
        "unanswerable_said_not_found": None,
        "by_type": {
            kind: {
                "not_found_without_evidence": 1.0,
                "not_found_when_answerable": 0.0,
                "unanswerable_said_not_found": None,
            }
            for kind in ("bridge", "comparison")
        },
    }
    assert report["followups"] is None  # no question gives a standalone rewrite
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
    # Asked again with its gold hidden, each question's outcome is kept beside it, answer and all.
    hidden = [line["evidence_hidden"] for line in details.values()]
    assert all(set(h) == {"not_found", "answer"} for h in hidden)
    assert all(h["answer"] == "" for h in hidden if h["not_found"])
    said = sum(h["not_found"] for h in hidden) / len(hidden)
    assert said == pytest.approx(report["not_found"]["not_found_without_evidence"], abs=1e-4)
    stats = json.loads((out / "report.json").read_text())["details"]["rounds"]
    assert stats["latency_by_round"]["2"]["questions"] >= 1
    # Follow-up queries are counted, and those sharing no word with the question: the bridge's
    # "Adriana Trigiani" is one (a name the question could not say).
    later = [q for line in details.values() for r in line["rounds"][1:] for q in r["queries"]]
    assert stats["follow_up_queries"] == len(later) >= 1
    assert 1 <= stats["follow_up_queries_sharing_nothing"] <= len(later)
    assert "sharing no word with the question" in (out / "report.md").read_text()
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


DOCUMENTS = {
    "people/parental-leave.md": "# Parental leave\n\nEvery parent receives 20 weeks of fully paid parental "
    "leave. Parental leave can be taken in up to three blocks within the first 18 months after the child "
    "arrives.\n",
    "people/sabbatical.md": "# Sabbatical\n\nAfter five years at the company you may take a sabbatical of "
    "up to 8 weeks, unpaid, once your manager approves it.\n",
    "engineering/deploys.md": "# Deploys\n\nWe deploy Monday to Thursday between 09:00 and 16:00. Friday "
    "deploys need the approval of the engineering manager on duty.\n",
}
BABY = "we are expecting a baby, so I am planning my parental leave"
NATURAL: list[dict[str, Any]] = [
    {
        "id": "leave",
        "question": "how much time off do new parents get",
        "answer": "20 weeks of fully paid parental leave.",
        "answers": ["20 weeks"],
        "type": "answerable",
        "gold_ids": [],
        "gold_sources": ["docs/people/parental-leave.md"],
        "gold_collections": ["people"],
        "history": [],
    },
    {
        "id": "friday",
        "question": "can I ship to prod on a friday afternoon?",
        "answer": "Only with the approval of the engineering manager on duty.",
        "answers": ["engineering manager on duty"],
        "type": "answerable",
        "gold_ids": [],
        "gold_sources": ["docs/engineering/deploys.md"],
        "gold_collections": ["engineering"],
        "history": [],
    },
    {
        "id": "bonus",
        "question": "do we get a yearly bonus?",
        "answer": "",
        "answers": [],
        "type": "unanswerable",
        "gold_ids": [],
        "gold_sources": [],
        "gold_collections": [],
        "history": [],
    },
    {
        "id": "weeks",
        "question": "how many weeks can I take?",
        "answer": "20 weeks.",
        "answers": ["20 weeks"],
        "type": "followup",
        "gold_ids": [],
        "gold_sources": ["docs/people/parental-leave.md"],
        "gold_collections": ["people"],
        "history": [{"role": "user", "text": BABY}, {"role": "agent", "text": "Congratulations!"}],
    },
    {
        "id": "months",
        "question": "Within how many months can parental leave be taken?",
        "original_question": "And within how many months?",
        "answer": "Within the first 18 months after the child arrives.",
        "answers": ["18 months"],
        "type": "followup_rewritten",
        "gold_ids": [],
        "gold_sources": ["docs/people/parental-leave.md"],
        "gold_collections": ["people"],
        "history": [{"role": "user", "text": BABY}, {"role": "user", "text": "Can it be split?"}],
    },
]


@pytest.fixture
def natural(tmp_path: Path) -> Path:
    """Questions in people's words over Markdown documents outside the collections file's folder
    (their source names are absolute paths), gold given by document."""
    for name, text in DOCUMENTS.items():
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    root = tmp_path / "set"
    root.mkdir()
    (root / "collections.yaml").write_text(
        "collections:\n"
        "  - {name: people, title: People policies, sources: ['../docs/people/*.md']}\n"
        "  - {name: engineering, title: Engineering handbook, sources: ['../docs/engineering/*.md']}\n"
    )
    (root / "questions_dev.jsonl").write_text("\n".join(json.dumps(q) for q in NATURAL) + "\n")
    return root


def test_eval_scores_document_gold_unanswerable_questions_and_replayed_conversations(
    natural: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main(["eval", str(natural), "--json", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    details = {
        line["id"]: line for line in map(json.loads, (out / "questions.jsonl").read_text().splitlines())
    }
    assert set(details) == {q["id"] for q in NATURAL}
    # Document-level gold: a passage counts for the document its (absolute) source name ends with.
    assert details["leave"]["retrieved_sources"][0].endswith("/docs/people/parental-leave.md")
    assert report["by_type"]["answerable"]["recall_at_5"] == 1.0
    assert report["baseline"]["by_type"]["answerable"]["recall_at_5"] == 1.0
    assert report["by_type"]["answerable"]["routing_recall"] == 1.0
    # The unanswerable question is scored on "not found", never on recall.
    assert report["by_type"]["unanswerable"]["recall_at_5"] is None
    nf = report["not_found"]
    assert (nf["answerable"], nf["unanswerable"]) == (4, 1)
    assert nf["unanswerable_said_not_found"] == float(not details["bonus"]["found"])
    assert report["overall"]["said_not_found_unanswerable"] == nf["unanswerable_said_not_found"]
    answerable = [d for d in details.values() if d["gold_sources"]]
    assert nf["not_found_when_answerable"] == pytest.approx(
        sum(not d["found"] for d in answerable) / len(answerable), abs=1e-4
    )
    assert nf["not_found_without_evidence"] is not None  # gold documents hidden by source name
    # A follow-up is asked after its history's user turns, in one conversation of its own (the
    # agent's turns are Confer's own answers): its memory holds them when the question comes.
    weeks = details["weeks"]
    assert weeks["asked"] == "how many weeks can I take?" and len(weeks["history"]) == 2
    assert weeks["earlier_turns"] == 1 and details["months"]["earlier_turns"] == 2
    assert details["leave"]["earlier_turns"] == 0 and details["leave"]["understood"] == "as_asked"
    # A dataset's standalone rewrite is asked alone as well, for the R@k comparison.
    months = details["months"]
    assert months["asked"] == "And within how many months?"
    assert months["standalone_retrieved"] and weeks["standalone_retrieved"] is None
    followups = report["followups"]
    assert set(followups["by_type"]) == {"followup_rewritten"}
    assert followups["overall"]["questions"] == 1
    assert followups["overall"]["standalone_recall_at_5"] == 1.0
    assert followups["overall"]["as_asked_recall_at_5"] is not None
    # Answers: token recall against the reference, the share of cited passages from a gold
    # document, and answers with a section for a collection the gold is not in.
    found = [d for d in answerable if d["found"]]
    assert found, "no answerable question was answered"
    assert report["overall"]["token_recall"] == pytest.approx(
        sum(d["token_recall"] or 0.0 for d in details.values() if d["token_recall"] is not None)
        / sum(1 for d in details.values() if d["token_recall"] is not None),
        abs=1e-4,
    )
    cited = [s for d in found for s in d["cited_sources"]]
    assert all(len(d["cited"]) == len(d["cited_sources"]) for d in found)
    assert all(set(d["cited"]) <= set(d["retrieved"]) for d in found)
    from_gold = [
        any(s.endswith("/" + g) for g in d["gold_sources"]) for d in found for s in d["cited_sources"]
    ]
    assert cited and report["overall"]["cited_from_gold"] == pytest.approx(
        sum(from_gold) / len(from_gold), abs=1e-4
    )
    unrelated = [any(c not in d["gold_collections"] for c in d["sections"] if c) for d in found]
    assert report["overall"]["unrelated_sections"] == pytest.approx(sum(unrelated) / len(unrelated), abs=1e-4)
    markdown = (out / "report.md").read_text()
    for heading in ("## Answers", "## Follow-ups", '## Saying "not found"', "token recall %"):
        assert heading in markdown, heading
