"""The report of ``confer eval``: a run's figures assembled into one dict (``report.json``) and
written for people: ``report.md``, ``questions.jsonl`` (one line per question, enough to study a
miss), the recall and latency plots, and the conversation suite's table."""

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.evaluation.faithfulness import KINDS
from bot.evaluation.scoring import (
    KS,
    QuestionResult,
    contains_answer,
    followup_report,
    round_stats,
    summarize,
    token_recall,
)


def questions_report(
    results: Sequence[QuestionResult], *, with_model: bool, index_seconds: float, split: str, dataset: Path
) -> dict[str, Any]:
    """The questions suite's report: the summaries overall and by question type, for Confer and the
    one-index baselines, the run's details and one entry per question."""
    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_type[result.question.type].append(result)
    return {
        "overall": summarize(results, baseline=False, with_model=with_model),
        "by_type": {
            t: summarize(rs, baseline=False, with_model=with_model) for t, rs in sorted(by_type.items())
        },
        "baseline": {
            "overall": summarize(results, baseline=True, with_model=with_model),
            "by_type": {
                t: summarize(rs, baseline=True, with_model=with_model) for t, rs in sorted(by_type.items())
            },
        },
        # One index by words and meaning: only when embeddings are on.
        "hybrid_baseline": {
            "overall": summarize(results, baseline=True, with_model=with_model, hybrid=True),
            "by_type": {
                t: summarize(rs, baseline=True, with_model=with_model, hybrid=True)
                for t, rs in sorted(by_type.items())
            },
        }
        if any(r.hybrid_ranked for r in results)
        else None,
        "questions": len(results),
        "details": {
            "dataset": str(dataset),
            "split": split,
            "index_seconds": round(index_seconds, 2),
            "answer_modes": dict(Counter(r.mode for r in results)),
            "questions_by_type": dict(sorted(Counter(r.question.type for r in results).items())),
            "latencies": [round(r.seconds, 4) for r in results],
            "branch_latencies": [round(s, 4) for r in results for s in r.branch_seconds],
            "rounds": round_stats(results),
        },
        "followups": followup_report(results),
        "per_question": [_question_details(r) for r in results],
    }


def _question_details(result: QuestionResult) -> dict[str, Any]:
    """One line of ``questions.jsonl``: enough to study a miss."""
    return {
        "id": result.question.id,
        "question": result.question.question,
        "type": result.question.type,
        "asked": result.question.as_asked,
        "history": [{"role": role, "text": text} for role, text in result.question.history],
        "searched": result.searched,
        "understood": result.understood,
        "earlier_turns": result.earlier_turns,
        "gold_ids": list(result.question.gold_ids),
        "gold_sources": list(result.question.gold_sources),
        "gold_collections": list(result.question.gold_collections),
        "retrieved": result.ranked,
        "retrieved_sources": result.ranked_sources,
        "baseline_retrieved": result.baseline_ranked,
        "standalone_retrieved": result.standalone_ranked,
        "collections": result.chosen,
        "rounds": [r.model_dump() for r in result.rounds],
        "found": result.found,
        "right": contains_answer(result),
        "token_recall": token_recall(result.answer_sentences, result.question.reference),
        "sections": result.sections,
        "cited": result.cited,
        "cited_sources": result.cited_sources,
        "verdict": result.verdict,
        "choice": result.choice,
        "answer": result.answer_text,
        "reply": result.reply,
        "seconds": round(result.seconds, 4),
    }


def questions_jsonl(report: dict[str, Any]) -> str:
    """``questions.jsonl``: the per-question details of a report, one JSON object a line."""
    return "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in report.get("per_question", []))


def markdown_report(report: dict[str, Any]) -> str:
    details = report["details"]
    rows = [("overall", report["overall"], report["baseline"]["overall"])]
    rows += [(t, m, report["baseline"]["by_type"][t]) for t, m in report["by_type"].items()]
    hybrid = report.get("hybrid_baseline")

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}"

    lines = [
        f"# Confer evaluation: {Path(details['dataset']).name}, split {details['split']}",
        "",
        f"{report['questions']} questions; answers {details['answer_modes']}; indexing took "
        f"{details['index_seconds']} s.",
        "",
        "## Retrieval (recall of gold paragraphs, or of gold documents for a set that names them, %)",
        "",
        "| questions | Confer R@2 | R@5 | R@10 | one-index baseline R@2 | R@5 | R@10 "
        + ("| one-index hybrid baseline R@2 | R@5 | R@10 |" if hybrid else "|"),
        "|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if hybrid else ""),
    ]
    for name, m, b in rows:
        line = (
            f"| {name} | {pct(m['recall_at_2'])} | {pct(m['recall_at_5'])} | {pct(m['recall_at_10'])} | "
            f"{pct(b['recall_at_2'])} | {pct(b['recall_at_5'])} | {pct(b['recall_at_10'])} |"
        )
        if hybrid:
            h = hybrid["overall"] if name == "overall" else hybrid["by_type"][name]
            line += f" {pct(h['recall_at_2'])} | {pct(h['recall_at_5'])} | {pct(h['recall_at_10'])} |"
        lines.append(line)
    lines += [
        "",
        "## Routing, citations, answers, latency",
        "",
        "| questions | routing recall % | collections / question | gold cited % | citation validity % "
        "| supported sentences % | answer contains gold % | p50 s | p95 s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m, _ in rows:
        lines.append(
            f"| {name} | {pct(m['routing_recall'])} | {m['collections_per_question']} | "
            f"{pct(m['gold_cited'])} | {pct(m['citation_validity'])} | {pct(m['supported_sentences'])} | "
            f"{pct(m['answer_contains'])} | {m['p50_seconds']} | {m['p95_seconds']} |"
        )
    lines += [
        "",
        "## Answers",
        "",
        'Of the answers to answerable questions (a "not found" reply is no answer): answers citing a '
        "gold passage or document; cited passages that are gold or from a gold document; answers with a "
        "section for a collection the gold is not in. Token recall: the share of the reference answer's "
        'content words in the answer (a "not found" reply scores 0).',
        "",
        "| questions | n | answer contains gold % | token recall % | answers citing gold % "
        "| cited passages from gold % | answers with an unrelated collection's section % "
        "| unanswerable said not found % | answerable wrongly not found % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    counts = details.get("questions_by_type", {})
    for name, m, _ in rows:
        n = report["questions"] if name == "overall" else counts.get(name, "")
        lines.append(
            f"| {name} | {n} | {pct(m.get('answer_contains'))} | {pct(m.get('token_recall'))} | "
            f"{pct(m.get('answers_citing_gold'))} | {pct(m.get('cited_from_gold'))} | "
            f"{pct(m.get('unrelated_sections'))} | {pct(m.get('said_not_found_unanswerable'))} | "
            f"{pct(m.get('wrongly_not_found_answerable'))} |"
        )
    followups = report.get("followups")
    if followups:
        lines += [
            "",
            "## Follow-ups: as asked after their history, and the dataset's standalone rewrite alone",
            "",
            "| questions | n | as asked R@2 | R@5 | R@10 | standalone rewrite R@2 | R@5 | R@10 "
            "| R@5 difference |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, f in [("overall", followups["overall"]), *followups["by_type"].items()]:
            gap = (
                "–"
                if f["as_asked_recall_at_5"] is None or f["standalone_recall_at_5"] is None
                else f"{100 * (f['as_asked_recall_at_5'] - f['standalone_recall_at_5']):+.1f}"
            )
            lines.append(
                f"| {name} | {f['questions']} | "
                + " | ".join(pct(f[f"as_asked_recall_at_{k}"]) for k in KS)
                + " | "
                + " | ".join(pct(f[f"standalone_recall_at_{k}"]) for k in KS)
                + f" | {gap} |"
            )
    if "not_found" in report:
        nf = report["not_found"]
        lines += [
            "",
            '## Saying "not found"',
            "",
            f"Of the {nf['unanswerable']} questions the documents do not answer, Confer said it found "
            f"nothing that answers for {pct(nf['unanswerable_said_not_found'])} %; of the "
            f"{nf['answerable']} answerable ones, it wrongly said so for "
            f"{pct(nf['not_found_when_answerable'])} %. With each answerable question's supporting "
            f"paragraphs (or documents) hidden, it said so for {pct(nf['not_found_without_evidence'])} %.",
            "",
            "| questions | unanswerable said not found % | answerable wrongly not found % "
            "| not found without evidence % |",
            "|---|---:|---:|---:|",
        ]
        for name, f in [("overall", nf), *nf["by_type"].items()]:
            lines.append(
                f"| {name} | {pct(f['unanswerable_said_not_found'])} | {pct(f['not_found_when_answerable'])} "
                f"| {pct(f['not_found_without_evidence'])} |"
            )
    if report.get("verdicts"):
        v = report["verdicts"]
        lines += [
            "",
            f"Yes/no comparison verdicts: stated for {v['stated']} of {v['yes_no_questions']} questions "
            f"with a yes/no gold answer, {v['correct']} of them right (precision {pct(v['precision'])} %).",
        ]
        if v.get("choices"):
            lines.append(
                f"Which-came-first choices: stated for {v['choices']['stated']} questions, "
                f"{v['choices']['correct']} of them naming the gold answer."
            )
    stats = details.get("rounds")
    if stats:
        by_rounds = ", ".join(f"{n}: {c}" for n, c in stats["questions_by_rounds"].items())
        per_round = "; ".join(
            f"round {n}: p50 {1000 * v['p50_seconds']:.0f} ms, p95 {1000 * v['p95_seconds']:.0f} ms"
            for n, v in stats["latency_by_round"].items()
        )
        lines += [
            "",
            f"Research rounds per question: {report['overall'].get('rounds_per_question')} on average "
            f"(questions by rounds taken: {by_rounds}). Latency per round: {per_round}. "
            f"Follow-up queries: {stats['follow_up_queries']}, "
            f"{stats['follow_up_queries_sharing_nothing']} of them sharing no word with the question.",
        ]
    if "f1" in report["overall"]:
        lines += [
            "",
            f"With the model: exact match {pct(report['overall']['exact_match'])} %, "
            f"F1 {pct(report['overall']['f1'])} %.",
        ]
    if "faithfulness" in report:
        lines += faithfulness_markdown(report["faithfulness"])
    lines.append("")
    return "\n".join(lines)


def faithfulness_markdown(faithfulness: dict[str, Any]) -> list[str]:
    true = faithfulness["true"]
    lines = [
        "",
        "## Faithfulness (a suite built from the corpus, graded independently of the verifier)",
        "",
        f"True sentences kept: {true['kept']} of {true['total']} ({100 * true['rate']:.1f} %).",
        "",
        "| changed once by | sentences | caught | slipped through | caught % |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        row = faithfulness[kind]
        caught = row["total"] - row["slipped"]
        lines.append(
            f"| {kind} | {row['total']} | {caught} | {row['slipped']} | {100 * row['caught_rate']:.1f} |"
        )
    return lines


def write_plots(report: dict[str, Any], out: Path) -> list[Path]:
    """Recall@k for Confer against the baseline by question type, and the latency distribution.
    Needs matplotlib (the ``eval`` extra: ``make eval`` installs it); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    # Recall exists only for question types with gold passages (not for unanswerable ones).
    groups = ["overall", *(t for t, m in report["by_type"].items() if m["recall_at_2"] is not None)]
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.6), sharey=True, squeeze=False)
    for axis, group in zip(axes[0], groups, strict=True):
        ours = report["overall"] if group == "overall" else report["by_type"][group]
        base = report["baseline"]["overall"] if group == "overall" else report["baseline"]["by_type"][group]
        xs = range(len(KS))
        axis.bar([x - 0.2 for x in xs], [100 * ours[f"recall_at_{k}"] for k in KS], 0.4, label="Confer")
        axis.bar([x + 0.2 for x in xs], [100 * base[f"recall_at_{k}"] for k in KS], 0.4, label="one index")
        axis.set_xticks(list(xs), [f"R@{k}" for k in KS])
        axis.set_title(group)
        axis.set_ylim(0, 100)
    axes[0][0].set_ylabel("gold paragraphs retrieved (%)")
    axes[0][0].legend(loc="lower right")
    fig.tight_layout()
    path = out / "recall.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    fig, axis = plt.subplots(figsize=(6, 3.6))
    axis.hist([1000 * s for s in report["details"]["latencies"]], bins=40, alpha=0.8, label="question")
    axis.hist(
        [1000 * s for s in report["details"]["branch_latencies"]], bins=40, alpha=0.6, label="sub-agent"
    )
    axis.set_xlabel("milliseconds")
    axis.set_ylabel("count")
    axis.legend()
    fig.tight_layout()
    path = out / "latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def conversation_markdown(report: dict[str, Any]) -> str:
    lines = [
        "| questions | type | follow-up R@2 | written R@2 | follow-up R@5 | written R@5 | rewrite = written "
        "|",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figures in [("all", report["overall"]), *report["by_type"].items()]:
        lines.append(
            f"| {figures['questions']} | {name} | {figures['followup_r@2']} | {figures['written_r@2']} | "
            f"{figures['followup_r@5']} | {figures['written_r@5']} | {figures['rewritten_as_written']}% |"
        )
    return "\n".join(lines) + "\n"
