"""``confer eval``: retrieval, routing, citation, answer and latency metrics on a benchmark
directory (``collections.yaml`` plus ``questions_<split>.jsonl``), against one BM25 index over the
whole corpus in the same run."""

import json
import re
import statistics
import string
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.app import build_backend, build_limits, build_llm
from bot.errors import DatasetError
from bot.metrics import build_metrics
from bot.render import plain_answer
from bot.service import ResearchService
from bot.settings import ConferSettings
from graph.citations import is_supported
from graph.models import Answer
from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import CollectionStats, Passage, SyncStats

KS = (2, 5, 10)
BASELINE = "all"


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    type: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...]
    gold_collections: tuple[str, ...]


@dataclass
class QuestionResult:
    question: EvalQuestion
    ranked: list[str]
    baseline_ranked: list[str]
    chosen: list[str]
    cited: list[str]
    citation_valid: bool
    sentences: int
    supported: int
    answer_text: str
    mode: str
    seconds: float
    branch_seconds: list[float] = field(default_factory=list)
    found: bool = True


def load_questions(dataset: Path, split: str) -> list[EvalQuestion]:
    path = dataset / f"questions_{split}.jsonl"
    if not path.is_file():
        raise DatasetError(f"{path}: not found")
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            questions.append(
                EvalQuestion(
                    id=str(raw["id"]),
                    question=raw["question"],
                    type=raw.get("type", "all"),
                    answers=tuple(raw.get("answers") or [raw["answer"]]),
                    gold_ids=tuple(raw["gold_ids"]),
                    gold_collections=tuple(raw.get("gold_collections", ())),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}: line {number} is not a valid question") from exc
    if not questions:
        raise DatasetError(f"{path}: no questions")
    return questions


def normalize_answer(text: str) -> str:
    """HotpotQA / SQuAD normalization: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1(prediction: str, gold: str) -> float:
    pred, truth = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = Counter(pred) & Counter(truth)
    same = sum(common.values())
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def _recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(set(gold)) if gold else 0.0


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.mean(values), 4) if values else None


def summarize(results: Sequence[QuestionResult], *, baseline: bool, with_model: bool) -> dict[str, Any]:
    """One ``M`` of the ``--json`` contract, for Confer or for the baseline."""

    def ranked(r: QuestionResult) -> list[str]:
        return r.baseline_ranked if baseline else r.ranked

    metrics: dict[str, Any] = {
        f"recall_at_{k}": _mean([_recall(ranked(r), r.question.gold_ids, k) for r in results]) for k in KS
    }
    if baseline:
        metrics.update(
            {
                name: None
                for name in (
                    "routing_recall",
                    "collections_per_question",
                    "gold_cited",
                    "citation_validity",
                    "supported_sentences",
                    "answer_contains",
                    "p50_seconds",
                    "p95_seconds",
                )
            }
        )
        return metrics
    sentences = sum(r.sentences for r in results)
    seconds = [r.seconds for r in results]
    p50, p95 = _percentile(seconds, 0.5), _percentile(seconds, 0.95)
    metrics.update(
        {
            "routing_recall": _mean(
                [float(set(r.question.gold_collections) <= set(r.chosen)) for r in results]
            ),
            "collections_per_question": _mean([float(len(r.chosen)) for r in results]),
            "gold_cited": _mean(
                [
                    len(set(r.cited) & set(r.question.gold_ids)) / len(set(r.question.gold_ids))
                    for r in results
                ]
            ),
            "citation_validity": _mean([float(r.citation_valid) for r in results]),
            "supported_sentences": round(sum(r.supported for r in results) / sentences, 4)
            if sentences
            else None,
            "answer_contains": _mean(
                [
                    float(
                        any(
                            normalize_answer(a) and normalize_answer(a) in normalize_answer(r.answer_text)
                            for a in r.question.answers
                        )
                    )
                    for r in results
                ]
            ),
            "p50_seconds": round(p50, 4) if p50 is not None else None,
            "p95_seconds": round(p95, 4) if p95 is not None else None,
        }
    )
    branch = [s for r in results for s in r.branch_seconds]
    metrics["branch_p50_seconds"] = round(_percentile(branch, 0.5) or 0.0, 4) if branch else None
    metrics["branch_p95_seconds"] = round(_percentile(branch, 0.95) or 0.0, 4) if branch else None
    if with_model:
        metrics["exact_match"] = _mean(
            [
                max(float(normalize_answer(r.answer_text) == normalize_answer(a)) for a in r.question.answers)
                for r in results
            ]
        )
        metrics["f1"] = _mean([max(f1(r.answer_text, a) for a in r.question.answers) for r in results])
    return metrics


def _judge(answer: Answer) -> tuple[bool, int, int, list[str]]:
    retrieved = {p.id for p in answer.retrieved}
    by_number = {c.n: c.passage for c in answer.citations}
    valid = all(c.passage.id in retrieved for c in answer.citations)
    total = supported = 0
    for section in answer.sections:
        for sentence in section.sentences:
            total += 1
            cited = [by_number[n] for n in sentence.citations if n in by_number]
            valid = valid and len(cited) == len(sentence.citations) and bool(cited)
            supported += bool(cited) and is_supported(sentence.text, [p.text for p in cited])
    return valid, total, supported, [c.passage.id for c in answer.citations]


async def evaluate(
    dataset: Path,
    *,
    split: str,
    settings: ConferSettings,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    config = load_collections(dataset / "collections.yaml")
    questions = load_questions(dataset, split)[:limit]
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="confer-eval-") as tmp:
        run_settings = settings.model_copy(update={"data_dir": Path(tmp)})
        backend = build_backend(run_settings)
        # Throw-away aliases, so an Elasticsearch cluster's own collections are never touched.
        collections = tuple(
            c.model_copy(update={"index": f"confer-eval-{tag}-{c.name}"}) for c in config.collections
        )
        config = config.model_copy(update={"collections": collections, "channels": {}})
        everything = Collection(
            name=BASELINE,
            title="Whole corpus",
            index=f"confer-eval-{tag}-{BASELINE}",
            sources=tuple(s for c in collections for s in c.sources),
        )
        started = time.monotonic()
        try:
            for collection in (*collections, everything):
                await index_collection(backend, collection, config)
            index_seconds = time.monotonic() - started
            results = await _run(questions, config, everything, backend, run_settings, progress)
            without_evidence = await _run_without_evidence(questions, config, backend, run_settings)
        finally:
            await _drop_eval_indexes(backend, (*collections, everything))
            await backend.close()
    with_model = bool(settings.llm_model)
    report = _report(
        results, with_model=with_model, index_seconds=index_seconds, split=split, dataset=dataset
    )
    report["not_found"] = not_found_report(results, without_evidence)
    return report


class EvidenceHidingBackend:
    """A search backend that never returns the passages in ``hidden``: a question's supporting
    paragraphs removed from the corpus, while the topically close ones stay. Each search asks for
    ``len(hidden)`` more hits, so the ranking below them is what the smaller corpus would give
    (BM25 statistics still count the hidden passages; a small effect on a corpus of thousands)."""

    def __init__(self, backend: SearchBackend) -> None:
        self._backend = backend
        self.hidden: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self._backend.name

    async def search(
        self, collection: Collection, query: str, *, limit: int, broad: bool = False
    ) -> list[Passage]:
        hits = await self._backend.search(collection, query, limit=limit + len(self.hidden), broad=broad)
        return [p for p in hits if p.id not in self.hidden][:limit]

    async def probe(self, collections: Sequence[Collection], query: str) -> dict[str, float]:
        return await self._backend.probe(collections, query)

    async def sync_collection(self, collection: Collection, passages: Sequence[Passage]) -> SyncStats:
        return await self._backend.sync_collection(collection, passages)

    async def passages_from_sources(self, collection: Collection, sources: Sequence[str]) -> list[Passage]:
        return await self._backend.passages_from_sources(collection, sources)

    async def drop_collection(self, collection: Collection) -> None:
        await self._backend.drop_collection(collection)

    async def stats(self, collection: Collection) -> CollectionStats | None:
        return await self._backend.stats(collection)

    async def health(self) -> bool:
        return await self._backend.health()

    async def close(self) -> None:
        """The wrapped backend is closed by its owner."""


async def _run_without_evidence(
    questions: Sequence[EvalQuestion],
    config: CollectionsConfig,
    backend: SearchBackend,
    settings: ConferSettings,
) -> list[bool]:
    """The not-found suite: each question asked again with its gold paragraphs hidden; ``True``
    where Confer (rightly) said it found nothing that answers."""
    hiding = EvidenceHidingBackend(backend)
    metrics = build_metrics()
    service = ResearchService(
        config=config,
        backend=hiding,
        metrics=metrics,
        limits=build_limits(settings),
        question_timeout=settings.question_timeout,
        llm=build_llm(settings, metrics),
    )
    said_not_found = []
    try:
        for item in questions:
            hiding.hidden = frozenset(item.gold_ids)
            answer = await service.answer(service.make_question(item.question), surface="cli")
            said_not_found.append(not answer.found)
    finally:
        if service.llm is not None:
            await service.llm.close()
    return said_not_found


def not_found_report(results: Sequence[QuestionResult], without_evidence: Sequence[bool]) -> dict[str, Any]:
    """How often Confer says "not found" when the evidence is gone (should be high) and when it
    is there (should be low)."""
    return {
        "questions": len(without_evidence),
        "not_found_without_evidence": _mean([float(x) for x in without_evidence]),
        "not_found_when_answerable": _mean([float(not r.found) for r in results]),
    }


async def _run(
    questions: Sequence[EvalQuestion],
    config: CollectionsConfig,
    everything: Collection,
    backend: SearchBackend,
    settings: ConferSettings,
    progress: Callable[[int, int], None] | None,
) -> list[QuestionResult]:
    metrics = build_metrics()
    service = ResearchService(
        config=config,
        backend=backend,
        metrics=metrics,
        limits=build_limits(settings),
        question_timeout=settings.question_timeout,
        llm=build_llm(settings, metrics),
    )
    results = []
    try:
        for number, item in enumerate(questions, 1):
            question = service.make_question(item.question)
            t0 = time.perf_counter()
            answer = await service.answer(question, surface="cli")
            seconds = time.perf_counter() - t0
            baseline = await backend.search(everything, item.question, limit=max(KS))
            valid, total, supported, cited = _judge(answer)
            results.append(
                QuestionResult(
                    question=item,
                    ranked=[p.id for p in answer.retrieved],
                    baseline_ranked=[p.id for p in baseline],
                    chosen=[o.name for o in answer.outcomes],
                    cited=cited,
                    citation_valid=valid,
                    sentences=total,
                    supported=supported,
                    # A "not found" reply is no answer, even when its closest sentence has the gold.
                    answer_text=plain_answer(answer, config) if answer.found else "",
                    mode=answer.mode,
                    seconds=seconds,
                    branch_seconds=[o.seconds for o in answer.outcomes],
                    found=answer.found,
                )
            )
            if progress is not None:
                progress(number, len(questions))
    finally:
        if service.llm is not None:
            await service.llm.close()
    return results


async def _drop_eval_indexes(backend: SearchBackend, collections: Sequence[Collection]) -> None:
    """Elasticsearch keeps indexes after the run unless they are dropped."""
    for collection in collections:
        await backend.drop_collection(collection)


def _report(
    results: Sequence[QuestionResult], *, with_model: bool, index_seconds: float, split: str, dataset: Path
) -> dict[str, Any]:
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
        "questions": len(results),
        "details": {
            "dataset": str(dataset),
            "split": split,
            "index_seconds": round(index_seconds, 2),
            "answer_modes": dict(Counter(r.mode for r in results)),
            "latencies": [round(r.seconds, 4) for r in results],
            "branch_latencies": [round(s, 4) for r in results for s in r.branch_seconds],
        },
    }


def markdown_report(report: dict[str, Any]) -> str:
    details = report["details"]
    rows = [("overall", report["overall"], report["baseline"]["overall"])]
    rows += [(t, m, report["baseline"]["by_type"][t]) for t, m in report["by_type"].items()]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}"

    lines = [
        f"# Confer evaluation: {Path(details['dataset']).name}, split {details['split']}",
        "",
        f"{report['questions']} questions; answers {details['answer_modes']}; indexing took "
        f"{details['index_seconds']} s.",
        "",
        "## Retrieval (recall of gold paragraphs, %)",
        "",
        "| questions | Confer R@2 | R@5 | R@10 | one-index baseline R@2 | R@5 | R@10 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m, b in rows:
        lines.append(
            f"| {name} | {pct(m['recall_at_2'])} | {pct(m['recall_at_5'])} | {pct(m['recall_at_10'])} | "
            f"{pct(b['recall_at_2'])} | {pct(b['recall_at_5'])} | {pct(b['recall_at_10'])} |"
        )
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
    if "not_found" in report:
        nf = report["not_found"]
        lines += [
            "",
            '## Saying "not found"',
            "",
            f"With each question's supporting paragraphs hidden, Confer said it found nothing that "
            f"answers for {pct(nf['not_found_without_evidence'])} % of {nf['questions']} questions; "
            f"with them present, for {pct(nf['not_found_when_answerable'])} % (answerable questions "
            f"wrongly declared not found).",
        ]
    if "f1" in report["overall"]:
        lines += [
            "",
            f"With the model: exact match {pct(report['overall']['exact_match'])} %, "
            f"F1 {pct(report['overall']['f1'])} %.",
        ]
    lines.append("")
    return "\n".join(lines)


def write_plots(report: dict[str, Any], out: Path) -> list[Path]:
    """Recall@k for Confer against the baseline by question type, and the latency distribution.
    Needs matplotlib (``pip install confer[eval]``); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    groups = ["overall", *report["by_type"]]
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.6), sharey=True)
    for axis, group in zip(axes, groups, strict=True):
        ours = report["overall"] if group == "overall" else report["by_type"][group]
        base = report["baseline"]["overall"] if group == "overall" else report["baseline"]["by_type"][group]
        xs = range(len(KS))
        axis.bar([x - 0.2 for x in xs], [100 * ours[f"recall_at_{k}"] for k in KS], 0.4, label="Confer")
        axis.bar([x + 0.2 for x in xs], [100 * base[f"recall_at_{k}"] for k in KS], 0.4, label="one index")
        axis.set_xticks(list(xs), [f"R@{k}" for k in KS])
        axis.set_title(group)
        axis.set_ylim(0, 100)
    axes[0].set_ylabel("gold paragraphs retrieved (%)")
    axes[0].legend(loc="lower right")
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
