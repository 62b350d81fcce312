"""The figures of ``confer eval``, computed from what each question got: answers normalized and
compared as HotpotQA does, recall of gold passages (or of gold documents), citation validity and
support, and the summaries a report holds (per question type, not found, verdicts, follow-ups,
rounds, conversations). A question without gold is scored on saying "not found"."""

import re
import statistics
import string
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.evaluation.datasets import EvalQuestion
from graph import Answer, ResearchRound, is_supported
from retrieval.language import content_words, stem_in, stems_in

KS = (2, 5, 10)  # the k of recall@k


@dataclass
class QuestionResult:
    """What one question got: from Confer, and from one index over the whole corpus."""

    question: EvalQuestion
    ranked: list[str]
    baseline_ranked: list[str]  # one index over the whole corpus, by words (BM25)
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
    rounds: list[ResearchRound] = field(default_factory=list)
    verdict: bool | None = None  # a yes/no comparison's derived verdict (graph.answer.verdict), if any
    choice: str = ""  # a "which came first" comparison's derived choice (graph.answer.verdict), if any
    hybrid_ranked: list[str] = field(default_factory=list)  # one index, by words and meaning
    # The source names of the passages above, in the same order (document-level gold).
    ranked_sources: list[str] = field(default_factory=list)
    baseline_sources: list[str] = field(default_factory=list)
    hybrid_sources: list[str] = field(default_factory=list)
    cited_sources: list[str] = field(default_factory=list)  # one per citation
    sections: list[str] = field(default_factory=list)  # the answer's sections' collections
    searched: str = ""  # the standalone question Confer researched (a follow-up's rewrite)
    understood: str = "as_asked"  # how a follow-up became that question (graph.research.followup)
    earlier_turns: int = 0  # the turns its conversation held when it was asked
    # The dataset's standalone rewrite asked alone, for follow-ups that have one (else ``None``).
    standalone_ranked: list[str] | None = None
    standalone_sources: list[str] = field(default_factory=list)
    answer_sentences: str = ""  # the answer's sentences alone (no collection titles), when found
    reply: str = ""  # what was posted, "not found" replies included


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


def is_gold_source(source: str, gold: str) -> bool:
    """A passage's source name is a gold document: the same path, or one ending with it (names of
    files outside the collections file's folder are absolute paths)."""
    return source == gold or source.endswith("/" + gold.lstrip("/"))


def gold_recall(ids: Sequence[str], sources: Sequence[str], question: EvalQuestion, k: int) -> float:
    """Share of the question's gold found in the first ``k`` passages: gold passages when the
    question names them, else gold documents (one passage of a document counts for it)."""
    if question.gold_ids:
        return _recall(ids, question.gold_ids, k)
    golds = set(question.gold_sources)
    found = {g for g in golds if any(is_gold_source(s, g) for s in sources[:k])}
    return len(found) / len(golds) if golds else 0.0


def _is_gold(passage_id: str, source: str, question: EvalQuestion) -> bool:
    if question.gold_ids:
        return passage_id in question.gold_ids
    return any(is_gold_source(source, g) for g in question.gold_sources)


def token_recall(answer: str, reference: str) -> float | None:
    """Share of the reference answer's content words (Snowball stems, function words left out)
    that Confer's answer contains; ``None`` without a reference."""
    wanted = {stem_in(w) for w in content_words(reference)}
    if not wanted:
        return None
    given = {stem_in(w) for w in content_words(answer)}
    return len(wanted & given) / len(wanted)


def contains_answer(result: QuestionResult, text: str | None = None) -> bool:
    """The answer (or ``text``) contains one of the gold answers (normalized); a "not found" reply
    has no answer text."""
    said = normalize_answer(result.answer_text if text is None else text)
    return any(normalize_answer(a) and normalize_answer(a) in said for a in result.question.answers)


_CONFER_ONLY = (
    "routing_recall",
    "collections_per_question",
    "gold_cited",
    "citation_validity",
    "supported_sentences",
    "answer_contains",
    "reply_contains",
    "median_answer_words",
    "token_recall",
    "answers_citing_gold",
    "cited_from_gold",
    "unrelated_sections",
    "said_not_found_unanswerable",
    "wrongly_not_found_answerable",
    "p50_seconds",
    "p95_seconds",
)


def summarize(
    results: Sequence[QuestionResult], *, baseline: bool, with_model: bool, hybrid: bool = False
) -> dict[str, Any]:
    """One ``M`` of the ``--json`` contract, for Confer or for a one-index baseline (by words, or
    with ``hybrid`` by words and meaning). Recall, routing and gold cited count the questions that
    have gold (passages or documents); questions without gold count in "said not found"."""

    def ranked(r: QuestionResult) -> tuple[list[str], list[str]]:
        if baseline:
            return (r.hybrid_ranked, r.hybrid_sources) if hybrid else (r.baseline_ranked, r.baseline_sources)
        return r.ranked, r.ranked_sources

    answerable = [r for r in results if r.question.has_gold]
    metrics: dict[str, Any] = {
        f"recall_at_{k}": _mean([gold_recall(*ranked(r), r.question, k) for r in answerable]) for k in KS
    }
    if baseline:
        metrics.update(dict.fromkeys(_CONFER_ONLY))
        return metrics
    sentences = sum(r.sentences for r in results)
    seconds = [r.seconds for r in results]
    p50, p95 = _percentile(seconds, 0.5), _percentile(seconds, 0.95)
    answered = [r for r in answerable if r.found]
    cited = [
        _is_gold(pid, source, r.question)
        for r in answered
        for pid, source in zip(r.cited, r.cited_sources, strict=True)
    ]
    metrics.update(
        {
            "routing_recall": _mean(
                [float(set(r.question.gold_collections) <= set(r.chosen)) for r in answerable]
            ),
            "collections_per_question": _mean([float(len(r.chosen)) for r in results]),
            # share of each question's gold (passages, or documents) that its answer cites
            "gold_cited": _mean(
                [
                    gold_recall(r.cited, r.cited_sources, r.question, len(r.cited)) if r.cited else 0.0
                    for r in answerable
                ]
            ),
            "citation_validity": _mean([float(r.citation_valid) for r in results]),
            "supported_sentences": round(sum(r.supported for r in results) / sentences, 4)
            if sentences
            else None,
            # questions with a short gold answer; a "not found" reply counts as a miss
            "answer_contains": _mean(
                [
                    float(contains_answer(r))
                    for r in results
                    if any(normalize_answer(a) for a in r.question.answers)
                ]
            ),
            # the same, in the whole reply: a "not found" reply's closest sentences count
            "reply_contains": _mean(
                [
                    float(contains_answer(r, r.reply))
                    for r in results
                    if any(normalize_answer(a) for a in r.question.answers)
                ]
            ),
            # words of a found answer's sentences (citation marks and collection titles left out)
            "median_answer_words": _percentile(
                [float(len(r.answer_sentences.split())) for r in results if r.found], 0.5
            ),
            "token_recall": _mean(
                [
                    t
                    for r in results
                    if (t := token_recall(r.answer_sentences, r.question.reference)) is not None
                ]
            ),
            # answers to answerable questions that cite at least one gold passage / document
            "answers_citing_gold": _mean(
                [
                    float(
                        any(_is_gold(p, s, r.question) for p, s in zip(r.cited, r.cited_sources, strict=True))
                    )
                    for r in answered
                ]
            ),
            # cited passages (of those answers) that are gold passages / from a gold document
            "cited_from_gold": _mean([float(c) for c in cited]),
            # answers with a section for a collection the question's gold is not in
            "unrelated_sections": _mean(
                [
                    float(any(c and c not in r.question.gold_collections for c in r.sections))
                    for r in answered
                    if r.question.gold_collections
                ]
            ),
            "said_not_found_unanswerable": _mean(
                [float(not r.found) for r in results if not r.question.has_gold]
            ),
            "wrongly_not_found_answerable": _mean([float(not r.found) for r in answerable]),
            "p50_seconds": round(p50, 4) if p50 is not None else None,
            "p95_seconds": round(p95, 4) if p95 is not None else None,
        }
    )
    branch = [s for r in results for s in r.branch_seconds]
    metrics["rounds_per_question"] = _mean([float(len(r.rounds)) for r in results])
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


def judge_answer(answer: Answer) -> tuple[bool, int, int, list[str]]:
    """Whether every citation is valid (a retrieved passage, every sentence citing one), how many
    sentences count and how many of those their cited passages support, and the cited ids."""
    retrieved = {p.id for p in answer.retrieved}
    by_number = {c.n: c.passage for c in answer.citations}
    valid = all(c.passage.id in retrieved for c in answer.citations)
    total = supported = 0
    # A verdict or choice (the first section) is Confer's derived sentence, checked by its rule:
    # only quoted sentences count as supported or not; its citations must still be valid.
    derived = answer.verdict is not None or bool(answer.choice)
    # A model-written answer is shown as it is verified, so its derived sentence comes last.
    derived_at = len(answer.sections) - 1 if answer.mode == "llm" else 0
    for index, section in enumerate(answer.sections):
        for sentence in section.sentences:
            cited_here = [by_number[n] for n in sentence.citations if n in by_number]
            if index == derived_at and derived:
                valid = valid and len(cited_here) == len(sentence.citations) and bool(cited_here)
                continue
            total += 1
            cited = [by_number[n] for n in sentence.citations if n in by_number]
            valid = valid and len(cited) == len(sentence.citations) and bool(cited)
            supported += bool(cited) and is_supported(sentence.text, [p.text for p in cited])
    return valid, total, supported, [c.passage.id for c in answer.citations]


def not_found_report(
    results: Sequence[QuestionResult], without_evidence: Sequence[bool | None]
) -> dict[str, Any]:
    """How often Confer says "not found" when the evidence is gone (should be high) and when it
    is there (should be low), and on the questions the documents do not answer (should be high)."""

    def figures(pairs: Sequence[tuple[QuestionResult, bool | None]]) -> dict[str, Any]:
        answerable = [(r, hidden) for r, hidden in pairs if r.question.has_gold]
        unanswerable = [r for r, _ in pairs if not r.question.has_gold]
        return {
            "not_found_without_evidence": _mean([float(h) for _, h in answerable if h is not None]),
            "not_found_when_answerable": _mean([float(not r.found) for r, _ in answerable]),
            "unanswerable_said_not_found": _mean([float(not r.found) for r in unanswerable]),
        }

    pairs = list(zip(results, without_evidence, strict=True))
    by_type: dict[str, list[tuple[QuestionResult, bool | None]]] = defaultdict(list)
    for pair in pairs:
        by_type[pair[0].question.type].append(pair)
    return {
        "questions": len(pairs),
        "answerable": sum(1 for r in results if r.question.has_gold),
        "unanswerable": sum(1 for r in results if not r.question.has_gold),
        **figures(pairs),
        "by_type": {kind: figures(subset) for kind, subset in sorted(by_type.items())},
    }


def verdict_report(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """Yes/no comparison verdicts: how many questions with a yes/no gold got one, and how many of
    those stated were right (a wrong verdict is worse than none)."""
    yes_no = [r for r in results if {normalize_answer(a) for a in r.question.answers} & {"yes", "no"}]
    stated = [r for r in yes_no if r.verdict is not None]
    right = [r for r in stated if ("yes" if r.verdict else "no") in map(normalize_answer, r.question.answers)]
    chosen = [r for r in results if r.choice]
    return {
        "yes_no_questions": len(yes_no),
        "stated": len(stated),
        "correct": len(right),
        "precision": round(len(right) / len(stated), 4) if stated else None,
        "stated_elsewhere": sum(1 for r in results if r.verdict is not None and r not in yes_no),
        # "Which came first, X or Y?": the side Confer chose, right when it names the gold answer.
        "choices": {"stated": len(chosen), "correct": sum(1 for r in chosen if _names_gold(r))},
    }


def _names_gold(result: QuestionResult) -> bool:
    """The chosen side and a gold answer name the same thing: the words of one are all in the
    other ("Arthur Conan Doyle" for "Arthur Ignatius Conan Doyle")."""
    chosen = set(normalize_answer(result.choice).split())
    golds = [set(normalize_answer(a).split()) for a in result.question.answers]
    return bool(chosen) and any(g and (chosen <= g or g <= chosen) for g in golds)


def followup_report(results: Sequence[QuestionResult]) -> dict[str, Any] | None:
    """Follow-ups whose dataset also gives a standalone rewrite (orgdocs ``followup_rewritten``):
    recall as asked after their history against the rewrite asked alone, per type. ``None`` when
    the set has none."""
    rows = [r for r in results if r.standalone_ranked is not None and r.question.has_gold]
    if not rows:
        return None

    def figures(subset: Sequence[QuestionResult]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(subset)}
        for k in KS:
            out[f"as_asked_recall_at_{k}"] = _mean(
                [gold_recall(r.ranked, r.ranked_sources, r.question, k) for r in subset]
            )
            out[f"standalone_recall_at_{k}"] = _mean(
                [gold_recall(r.standalone_ranked or [], r.standalone_sources, r.question, k) for r in subset]
            )
        return out

    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in rows:
        by_type[result.question.type].append(result)
    return {"overall": figures(rows), "by_type": {t: figures(rs) for t, rs in sorted(by_type.items())}}


def round_stats(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """How many questions took how many rounds, each round's wall-clock latency, and how many
    follow-up queries (those of rounds after the first) share no word with the question researched:
    a follow-up chases what the question needs, and one sharing nothing is a name's own search."""
    seconds: dict[int, list[float]] = defaultdict(list)
    follow_ups = sharing_nothing = 0
    for result in results:
        asked = stems_in(result.searched or result.question.question)
        for number, research_round in enumerate(result.rounds, 1):
            seconds[number].append(research_round.seconds)
            if number > 1:
                follow_ups += len(research_round.queries)
                sharing_nothing += sum(1 for q in research_round.queries if not stems_in(q) & asked)
    return {
        "follow_up_queries": follow_ups,
        "follow_up_queries_sharing_nothing": sharing_nothing,
        "questions_by_rounds": {
            str(n): c for n, c in sorted(Counter(len(r.rounds) for r in results).items())
        },
        "latency_by_round": {
            str(n): {
                "questions": len(values),
                "p50_seconds": round(_percentile(values, 0.5) or 0.0, 4),
                "p95_seconds": round(_percentile(values, 0.95) or 0.0, 4),
            }
            for n, values in sorted(seconds.items())
        },
    }


def conversation_report(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def figures(subset: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(subset)}
        for k in KS:
            for which in ("followup", "written"):
                values = [_recall(r[f"{which}_ranked"], r["gold"], k) for r in subset]
                out[f"{which}_r@{k}"] = round(100 * statistics.mean(values), 1) if values else None
        out["rewritten_as_written"] = (
            round(100 * statistics.mean(r["standalone"] == r["written"] for r in subset), 1)
            if subset
            else None
        )
        return out

    by_type = defaultdict(list)
    for row in rows:
        by_type[row["type"]].append(row)
    return {
        "overall": figures(rows),
        "by_type": {t: figures(r) for t, r in sorted(by_type.items())},
        "questions": list(rows),
    }
