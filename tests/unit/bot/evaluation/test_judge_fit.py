import json
from pathlib import Path

from bot.evaluation.datasets import EvalQuestion
from bot.evaluation.judge import Row, evaluate_on, fit, label, leave_one_domain_out, load_rows, main
from graph.answer.judge import FEATURES, MEANING_FEATURES, load_judges


def _question(answers: tuple[str, ...], *, gold_ids: tuple[str, ...] = ("p1",)) -> EvalQuestion:
    return EvalQuestion(
        id="q", question="how long is parental leave", type="answerable", answers=answers,
        gold_ids=gold_ids, gold_collections=("people",),
    )  # fmt: skip


def test_a_sentence_answers_when_its_passage_is_gold_and_it_says_the_answer() -> None:
    q = _question(("16 weeks",))
    assert label(q, "Parental leave is 16 weeks at full pay.", "p1", "people/leave.md") == 1
    assert label(q, "Parental leave is 16 weeks at full pay.", "p2", "people/other.md") == 0  # not gold
    assert label(q, "Parental leave is paid in full.", "p1", "people/leave.md") == 0  # not the answer
    by_document = EvalQuestion(
        id="q", question="q", type="answerable", answers=("16 weeks",), gold_ids=(),
        gold_collections=(), gold_sources=("people/leave.md",),
    )  # fmt: skip
    assert label(by_document, "It is 16 weeks.", "x", "/srv/docs/people/leave.md") == 1
    reference = _question(
        ("Employees may take sixteen weeks of paid parental leave within a year of the birth.",)
    )
    assert label(reference, "Parental leave: sixteen weeks, paid, within a year.", "p1", "") == 1
    assert label(reference, "The office is closed on public holidays and weekends.", "p1", "") == 0


def _rows(domain: str, shift: float) -> list[Row]:
    """Runs where the answering sentence has the higher first signal, and runs without evidence
    whose best sentence is weaker: separable, with some noise from ``shift``."""
    rows = []
    width = len(FEATURES)
    for i in range(30):
        strong = [0.6 + 0.01 * (i % 7) + shift] + [0.1 * ((i + k) % 3) for k in range(width - 1)]
        weak = [0.2 + 0.01 * (i % 5)] + [0.1 * ((i + k + 1) % 3) for k in range(width - 1)]
        rows.append(Row(domain, f"{domain}-{i}", True, [weak, strong, weak], [0, 1, 0]))
        rows.append(Row(domain, f"{domain}-{i}-hidden", False, [weak, weak], [0, 0]))
    return rows


def test_fitting_is_deterministic_and_separates_what_the_signals_separate(tmp_path: Path) -> None:
    rows = _rows("handbook", 0.0) + _rows("product", 0.05)
    first, second = fit(rows, meaning=True), fit(rows, meaning=True)
    assert (first.sentence.weights == second.sentence.weights).all() and first.answers == second.answers
    figures = evaluate_on(first, rows)
    assert figures["answered_right"] == 1.0 and figures["no_evidence_said_found"] == 0.0
    assert figures["sentence_auc"] == 1.0
    assert [domain for domain, _ in leave_one_domain_out(rows)] == ["handbook", "product"]
    words = fit(rows, meaning=False)
    assert not {FEATURES[c] for c in words.sentence.columns} & MEANING_FEATURES


def test_the_fit_command_writes_a_judge_the_runtime_loads(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    lines = [
        {"domain": r.domain, "question": r.question, "answerable": r.answerable, "hidden": False,
         "elsewhere": False, "features": r.features, "labels": r.labels}
        for r in _rows("handbook", 0.0) + _rows("product", 0.05)
    ]  # fmt: skip
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "judge.json"
    assert main(["fit", str(data), "--out", str(out)]) == 0
    assert len(load_rows([data])) == len(lines)
    judges = load_judges(out)
    assert 0.0 < judges.meaning.answers < 1.0
    again = tmp_path / "again.json"
    main(["fit", str(data), "--out", str(again)])
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")  # same data, same file


def test_no_run_whose_evidence_answers_would_be_told_nothing_related_was_found() -> None:
    rows = _rows("handbook", 0.0) + _rows("product", 0.05)
    # one answering run whose answering sentence is barely above the rest: still "related"
    width = len(FEATURES)
    faint = [0.32] + [0.0] * (width - 1)
    rows.append(Row("handbook", "faint", True, [faint, [0.3] + [0.0] * (width - 1)], [1, 0]))
    judge = fit(rows, meaning=True)
    answering = [r for r in rows if r.answerable and any(r.labels)]
    assert all(judge.sentence.probabilities(r.features).max() >= judge.related for r in answering)
    # what an answer's other sentences must reach is the level nearly every answering run's best does
    assert judge.quotes > judge.related
    figures = evaluate_on(judge, rows)
    assert figures["answerable_nothing"] == 0.0
    assert figures["without_nothing"] > 0.0  # runs weaker than every answering one are "nothing related"
