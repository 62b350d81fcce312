"""Fitting the answer judge (``graph.answer.judge``) from labelled questions of several domains.

``make judge`` runs two steps:

- ``collect``: each set's dev questions go through the same graph the bots use, over throw-away
  indexes, twice: as asked, and with their gold evidence hidden (as ``confer eval``'s not-found
  suite does). Every sentence the judge read is written out with its signals and a label: it
  answers when its passage is gold and it says the answer (holds a short gold answer; for a
  reference answer of several sentences, most of its content words are the reference's). Rows
  go to ``judge-data/<set>.jsonl``; a held-out split is never read.
- ``fit``: a logistic regression over the signals (L2, Newton's method: the same data gives the
  same file), each question weighing the same, then its two thresholds: ``answers``, the
  probability that best separates questions whose evidence answers from those whose evidence is
  gone or never existed (balanced accuracy, each domain weighing the same); ``related``, below
  which a reply says nothing related was found: the lowest best-sentence probability of any run
  whose evidence answers, so that no such run would have had what it found hidden (what was found
  is shown as the closest whenever it may be what the asker wants); ``quotes``, what a sentence of
  an answer other than its first reaches to be said (the best-sentence probability all but
  ``QUOTES_MISS`` of the answering runs reach). The words-only model is fitted the
  same way with the meaning signals left out. Leave-one-domain-out figures are printed (train on
  every domain but one, test on it)."""

import argparse
import asyncio
import json
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bot.chat.conversations import Conversations
from bot.chat.memory import build_local_memory
from bot.evaluation.datasets import EvalQuestion, load_questions
from bot.evaluation.scoring import is_gold_source, normalize_answer
from bot.evaluation.suites import EvidenceHidingBackend, ask_in_conversation, throwaway_indexes
from bot.metrics import build_metrics
from bot.settings import ConferSettings
from bot.wiring import build_service
from graph import BEST_FEW, FEATURES, JUDGE_FILE, MEANING_FEATURES, Answer, Judgement, question_signals
from retrieval.language import content_words, stem_in

logger = logging.getLogger(__name__)

L2 = 1.0  # ridge on the standardised weights: keeps a signal rare in the data from dominating
QUOTES_MISS = 0.05  # share of the answering runs whose best sentence may fall below ``quotes``
SHORT_ANSWER_WORDS = 6  # a gold answer longer than this is a reference answer, matched by words
REFERENCE_SHARE = 0.5  # share of a sentence's content words a reference answer must hold


@dataclass(frozen=True)
class Row:
    """One judged run of one question: its domain, whether the evidence answers it, and each
    sentence's signals and label."""

    domain: str
    question: str
    answerable: bool
    features: list[list[float]]
    labels: list[int]


def label(question: EvalQuestion, sentence: str, passage_id: str, source: str) -> int:
    """Whether a judged sentence answers: its passage is gold and it says the answer."""
    if question.gold_ids:
        gold = passage_id in question.gold_ids
    else:
        gold = any(is_gold_source(source, g) for g in question.gold_sources)
    if not gold:
        return 0
    text = normalize_answer(sentence)
    for answer in question.answers:
        if not normalize_answer(answer):
            continue
        if len(answer.split()) <= SHORT_ANSWER_WORDS:
            if normalize_answer(answer) in text:
                return 1
            continue
        own = {stem_in(w) for w in content_words(sentence)}
        reference = {stem_in(w) for w in content_words(answer)}
        if own and len(own & reference) >= REFERENCE_SHARE * len(own):
            return 1
    return 0


def _yes_no(question: EvalQuestion) -> bool:
    return bool(question.answers) and all(normalize_answer(a) in ("yes", "no") for a in question.answers)


def _row(domain: str, question: EvalQuestion, answer: Answer, *, hidden: bool) -> dict[str, Any] | None:
    judgement: Judgement | None = answer.judgement
    if judgement is None:  # a comparison, or a reply with no research
        return None
    sources = {p.id: p.source for p in answer.retrieved}
    titles = {p.id: p.title for p in answer.retrieved}
    answerable = question.has_gold and not hidden
    short = [normalize_answer(a) for a in question.answers if 0 < len(a.split()) <= SHORT_ANSWER_WORDS]
    return {
        "domain": domain,
        "question": question.id,
        "hidden": hidden,
        "answerable": answerable,
        # with the gold hidden, another document may say the answer too: such a run is no example
        # of evidence that does not answer, and the fit leaves it out
        "elsewhere": hidden
        and any(a and a in normalize_answer(s.text) for a in short for s in judgement.sentences),
        "features": [list(s.features) for s in judgement.sentences],
        # what was read, so that a new signal can be tried on these runs without running them again
        "asked": question.question,
        "texts": [s.text for s in judgement.sentences],
        "titles": [titles.get(s.passage_id, "") for s in judgement.sentences],
        "found": answer.found,
        "labels": [
            label(question, s.text, s.passage_id, sources.get(s.passage_id, "")) if answerable else 0
            for s in judgement.sentences
        ],
    }


async def collect(dataset: Path, domain: str, settings: ConferSettings) -> list[dict[str, Any]]:
    """Every dev question of ``dataset`` judged as asked and with its evidence hidden."""
    questions = [q for q in load_questions(dataset, "dev") if not _yes_no(q)]
    rows: list[dict[str, Any]] = []
    async with throwaway_indexes(dataset, settings, "confer-judge") as (config, backend, run_settings):
        metrics = build_metrics()
        service = build_service(run_settings, config=config, backend=backend, metrics=metrics)
        conversations = Conversations(memory=build_local_memory(), metrics=metrics)
        hiding = EvidenceHidingBackend(backend)
        hidden_service = build_service(run_settings, config=config, backend=hiding, metrics=metrics)
        for number, item in enumerate(questions, 1):
            asked = await ask_in_conversation(service, conversations, item, number)
            row = _row(domain, item, asked.answer, hidden=False)
            if row is not None:
                rows.append(row)
            if item.has_gold:
                hiding.hidden = frozenset(item.gold_ids)
                hiding.hidden_sources = frozenset(() if item.gold_ids else item.gold_sources)
                answer = await hidden_service.answer(
                    hidden_service.make_question(item.question), surface="cli"
                )
                row = _row(domain, item, answer, hidden=True)
                if row is not None:
                    rows.append(row)
            print(f"\r{domain}: {number}/{len(questions)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    return rows


def load_rows(paths: Sequence[Path]) -> list[Row]:
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            if raw["features"] and not raw.get("elsewhere"):
                rows.append(
                    Row(raw["domain"], raw["question"], raw["answerable"], raw["features"], raw["labels"])
                )
    return rows


Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Fitted:
    """A fitted logistic model over some of its signals' columns."""

    columns: tuple[int, ...]
    weights: Matrix
    bias: float
    means: Matrix
    scales: Matrix

    def probabilities(self, features: Sequence[Sequence[float]]) -> Matrix:
        x = np.array([[f[c] for c in self.columns] for f in features], dtype=np.float64)
        z = self.bias + ((x - self.means) / self.scales) @ self.weights
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))), dtype=np.float64)


def fit_logistic(x: Matrix, y: Matrix, w: Matrix, columns: Sequence[int]) -> Fitted:
    """Weighted, L2-regularised logistic regression by Newton's method (deterministic)."""
    x = x[:, list(columns)]
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    z = (x - means) / scales
    design = np.hstack([np.ones((len(z), 1)), z])
    beta = np.zeros(design.shape[1])
    ridge = np.full(design.shape[1], L2)
    ridge[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -40, 40)))
        gradient = design.T @ (w * (p - y)) + ridge * beta
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + np.diag(ridge)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return Fitted(tuple(columns), beta[1:], float(beta[0]), means, scales)


@dataclass(frozen=True)
class Judge:
    """Both stages and the thresholds on the second."""

    sentence: Fitted
    question: Fitted
    answers: float
    related: float
    quotes: float

    def ranked(self, row: Row) -> tuple[list[int], Matrix]:
        p = self.sentence.probabilities(row.features)
        return sorted(range(len(p)), key=lambda i: -p[i]), p

    def answerability(self, row: Row) -> float:
        return float(self.question.probabilities([_question_row(self.sentence, row)])[0])


def _question_row(sentence: Fitted, row: Row) -> list[float]:
    p = sentence.probabilities(row.features)
    order = sorted(range(len(p)), key=lambda i: -p[i])
    p2 = float(p[order[1]]) if len(order) > 1 else 1e-6
    return list(question_signals(row.features[order[0]], float(p[order[0]]), p2))


def _answers(sentence: Fitted, row: Row) -> bool:
    """The run answers: its evidence does, and one of the judge's best few sentences says it."""
    if not row.answerable:
        return False
    p = sentence.probabilities(row.features)
    order = sorted(range(len(p)), key=lambda i: -p[i])
    return any(row.labels[i] for i in order[:BEST_FEW])


def fit(rows: Sequence[Row], *, meaning: bool) -> Judge:
    columns = [i for i, name in enumerate(FEATURES) if meaning or name not in MEANING_FEATURES]
    x, y, w = _design(rows)
    sentence = fit_logistic(x, y, w, columns)
    # The answerability stage: each run once, the two labels weighing the same in each domain.
    qx = np.array([_question_row(sentence, r) for r in rows], dtype=np.float64)
    qy = np.array([float(_answers(sentence, r)) for r in rows], dtype=np.float64)
    qw = np.ones(len(rows))
    for domain in {r.domain for r in rows}:
        for label_ in (0.0, 1.0):
            own = [i for i, r in enumerate(rows) if r.domain == domain and qy[i] == label_]
            for i in own:
                qw[i] = 0.5 / len(own)
    qw *= len(rows) / qw.sum()  # as many runs' weight as there are runs, for the ridge to mean the same
    # the meaning signals of the best sentence stay out of the words-only model here too
    skip = {2 + i for i, name in enumerate(FEATURES) if not meaning and name in MEANING_FEATURES}
    question = fit_logistic(qx, qy, qw, [c for c in range(qx.shape[1]) if c not in skip])
    judge = Judge(sentence, question, 0.5, 0.0, 0.0)
    scores = [(judge.answerability(r), bool(qy[i]), r.domain) for i, r in enumerate(rows)]
    grid = [i / 200 for i in range(1, 200)]
    balanced = [_balanced(scores, t) for t in grid]
    top = max(balanced)
    winners = [t for t, b in zip(grid, balanced, strict=True) if b >= top - 1e-12]
    answers = winners[len(winners) // 2]
    # the best sentence's own probability in the runs that answer: none of them says "nothing
    # related", and all but a few of them quote a sentence at least as likely
    best = sorted(_best(sentence, r) for i, r in enumerate(rows) if qy[i])
    related = best[0] if best else 0.0
    quotes = best[int(QUOTES_MISS * len(best))] if best else 0.0
    return Judge(sentence, question, answers, related, quotes)


def _design(rows: Sequence[Row]) -> tuple[Matrix, Matrix, Matrix]:
    """Every sentence's signals, labels and weights: each question weighs the same, its
    answering and its other sentences half each (a question without one, all its own)."""
    xs, ys, ws = [], [], []
    for row in rows:
        positives = sum(row.labels)
        negatives = len(row.labels) - positives
        for features, y in zip(row.features, row.labels, strict=True):
            xs.append(features)
            ys.append(float(y))
            if positives and negatives:
                ws.append(0.5 / (positives if y else negatives))
            else:
                ws.append(1.0 / len(row.labels))
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64), np.array(ws, dtype=np.float64)


def _balanced(scores: Sequence[tuple[float, bool, str]], t: float) -> float:
    """Mean over domains of the balanced accuracy of "answers" at ``t``."""
    means = []
    for domain in sorted({d for _, _, d in scores}):
        yes = [p >= t for p, answers, d in scores if d == domain and answers]
        no = [p < t for p, answers, d in scores if d == domain and not answers]
        if yes and no:
            means.append(0.5 * (sum(yes) / len(yes) + sum(no) / len(no)))
    return sum(means) / len(means) if means else 0.0


def evaluate_on(judge: Judge, rows: Sequence[Row]) -> dict[str, float]:
    """On held-out rows: runs whose evidence answers that are answered with an answering sentence
    among the judge's best few, those said "not found", runs without evidence said found, the
    pair AUC of the sentence stage, and the replies that would say "nothing related": of runs
    whose evidence answers (what was found hidden), and of runs without evidence."""
    answerable = [r for r in rows if r.answerable and any(r.labels)]
    without = [r for r in rows if not r.answerable]
    aucs = []
    for row in answerable:
        if all(row.labels):
            continue
        p = judge.sentence.probabilities(row.features)
        pos = [v for v, y in zip(p, row.labels, strict=True) if y]
        neg = [v for v, y in zip(p, row.labels, strict=True) if not y]
        aucs.append(sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg)))
    return {
        "answered_right": _share(
            [judge.answerability(r) >= judge.answers and _answers(judge.sentence, r) for r in answerable]
        ),
        "wrongly_not_found": _share([judge.answerability(r) < judge.answers for r in answerable]),
        "no_evidence_said_found": _share([judge.answerability(r) >= judge.answers for r in without]),
        "sentence_auc": sum(aucs) / len(aucs) if aucs else math.nan,
        "answerable_nothing": _share([_best(judge.sentence, r) < judge.related for r in answerable]),
        "without_nothing": _share([_best(judge.sentence, r) < judge.related for r in without]),
        "answerable": len(answerable),
        "without_evidence": len(without),
    }


def _best(sentence: Fitted, row: Row) -> float:
    """The probability of the run's best sentence."""
    return float(sentence.probabilities(row.features).max())


def _share(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else math.nan


def _logistic_json(model: Fitted, width: int) -> dict[str, Any]:
    """A stage over all ``width`` signals (a left-out signal weighs nothing), rounded for a stable file."""
    weights = [0.0] * width
    means = [0.0] * width
    scales = [1.0] * width
    for k, c in enumerate(model.columns):
        weights[c] = round(float(model.weights[k]), 6)
        means[c] = round(float(model.means[k]), 6)
        scales[c] = round(float(model.scales[k]), 6)
    return {"weights": weights, "bias": round(model.bias, 6), "means": means, "scales": scales}


def _as_json(judge: Judge) -> dict[str, Any]:
    return {
        "sentence": _logistic_json(judge.sentence, len(FEATURES)),
        "question": _logistic_json(judge.question, len(FEATURES) + 2),
        "answers": round(judge.answers, 4),
        "related": round(judge.related, 4),
        "quotes": round(judge.quotes, 4),
    }


def leave_one_domain_out(rows: Sequence[Row], *, meaning: bool = True) -> list[tuple[str, dict[str, float]]]:
    table: list[tuple[str, dict[str, float]]] = []
    domains = sorted({r.domain for r in rows})
    if len(domains) < 2:
        return table
    for domain in domains:
        train = [r for r in rows if r.domain != domain]
        test = [r for r in rows if r.domain == domain]
        table.append((domain, evaluate_on(fit(train, meaning=meaning), test)))
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot.evaluation.judge", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="judge every dev question of each set and write its rows")
    c.add_argument("datasets", nargs="+", type=Path)
    c.add_argument("--out", type=Path, default=Path("judge-data"))
    f = sub.add_parser("fit", help="fit the judge from collected rows and write judge.json")
    f.add_argument("rows", nargs="+", type=Path)
    f.add_argument("--out", type=Path, default=JUDGE_FILE)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.command == "collect":
        settings = ConferSettings()
        for dataset in args.datasets:
            domain = dataset.resolve().name
            collected = asyncio.run(collect(dataset, domain, settings))
            out = args.out / f"{domain}.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in collected), encoding="utf-8")
            print(f"{domain}: {len(collected)} judged runs -> {out}")
        return 0
    rows = load_rows(args.rows)
    meaning = fit(rows, meaning=True)
    words = fit(rows, meaning=False)
    data = {"features": list(FEATURES), "meaning": _as_json(meaning), "words": _as_json(words)}
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(
        f"wrote {args.out}: answers at {meaning.answers:.3f}, related at {meaning.related:.3f}, "
        f"quotes at {meaning.quotes:.3f}"
    )
    print("on the rows it was fitted on:")
    for domain in sorted({r.domain for r in rows}):
        own = evaluate_on(meaning, [r for r in rows if r.domain == domain])
        print(f"  {domain}: " + ", ".join(f"{k} {v:.3f}" for k, v in own.items()))
    for name, with_meaning in (("meaning and words", True), ("words only", False)):
        print(f"leave one domain out, {name} (trained on the others):")
        print(
            "| left out | answerable | answered right | wrongly not found | no evidence, found | AUC"
            ' | answerable, "nothing related" | no evidence, "nothing related" |'
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for domain, figures in leave_one_domain_out(rows, meaning=with_meaning):
            print(
                f"| {domain} | {figures['answerable']} | {100 * figures['answered_right']:.1f} | "
                f"{100 * figures['wrongly_not_found']:.1f} | {100 * figures['no_evidence_said_found']:.1f} | "
                f"{figures['sentence_auc']:.3f} | {100 * figures['answerable_nothing']:.1f} | "
                f"{100 * figures['without_nothing']:.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
