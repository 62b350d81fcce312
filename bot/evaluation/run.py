"""``confer eval``: retrieval, routing, citation, answer and latency metrics on a benchmark
directory (``collections.yaml`` plus ``questions_<split>.jsonl``), against one BM25 index over the
whole corpus in the same run.

Gold is given by passage (``gold_ids``) or by document (``gold_sources``: paths a passage's source
name ends with, for sets written by hand, whose passage ids change whenever a document does); a
question with neither is unanswerable and scored on saying "not found". A question with a
``history`` is asked after its earlier user turns, in one conversation, as the bots and the
terminal ask a follow-up."""

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

from bot.chat.conversations import Conversations, answer_text
from bot.chat.memory import ThreadKey, build_local_memory
from bot.chat.render import plain_answer
from bot.chat.service import ResearchService
from bot.errors import DatasetError
from bot.evaluation.faithfulness import KINDS, build_suite, grade
from bot.metrics import build_metrics
from bot.settings import ConferSettings
from bot.wiring import build_backend, build_service
from graph import Answer, ResearchRound, is_supported
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.collections import Collection, CollectionsConfig, load_collections, resolve_sources
from retrieval.errors import DocumentLoadError
from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.ingest.pipeline import index_collection, source_name
from retrieval.language import content_words, stem_in
from retrieval.passages import Passage

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
    gold_sources: tuple[str, ...] = ()  # answering documents, as paths their source names end with
    history: tuple[tuple[str, str], ...] = ()  # earlier turns: (role "user" | "agent", text)
    reference: str = ""  # the reference answer (a few sentences in orgdocs; a fact in the samples)
    asked: str = ""  # the question as asked, when ``question`` is the dataset's standalone rewrite

    @property
    def has_gold(self) -> bool:
        return bool(self.gold_ids or self.gold_sources)

    @property
    def as_asked(self) -> str:
        """What a person typed: the original turn when the dataset rewrote it, else the question."""
        return self.asked if self.asked and self.history else self.question

    @property
    def user_turns(self) -> list[str]:
        """The earlier turns Confer is asked again (its own answers stand in for the agent's)."""
        return [text for role, text in self.history if role == "user" and text.strip()]


@dataclass
class QuestionResult:
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
                    gold_sources=tuple(str(s) for s in raw.get("gold_sources") or ()),
                    history=tuple((str(t["role"]), str(t["text"])) for t in raw.get("history") or ()),
                    reference=str(raw.get("answer") or ""),
                    asked=str(raw.get("original_question") or ""),
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


def _right(result: QuestionResult) -> bool:
    return any(
        normalize_answer(a) and normalize_answer(a) in normalize_answer(result.answer_text)
        for a in result.question.answers
    )


_CONFER_ONLY = (
    "routing_recall",
    "collections_per_question",
    "gold_cited",
    "citation_validity",
    "supported_sentences",
    "answer_contains",
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
                [float(_right(r)) for r in results if any(normalize_answer(a) for a in r.question.answers)]
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


def _judge(answer: Answer) -> tuple[bool, int, int, list[str]]:
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
        # Passage vectors are kept where the configured data folder keeps them: a second run embeds
        # nothing again.
        run_settings = settings.model_copy(
            update={"data_dir": Path(tmp), "embeddings_cache": settings.vector_cache_path}
        )
        backend = build_backend(run_settings)
        # The one-index baseline by words alone reads the same index (with embeddings off, the
        # backend itself).
        words = (
            build_backend(run_settings.model_copy(update={"embeddings": "off"}))
            if settings.embeddings != "off"
            else None
        )
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
            results = await _run(questions, config, everything, backend, run_settings, progress, words=words)
            without_evidence = await _run_without_evidence(questions, config, backend, run_settings)
        finally:
            await _drop_eval_indexes(backend, (*collections, everything))
            await backend.close()
            if words is not None:
                await words.close()
    with_model = bool(settings.llm_model)
    report = _report(
        results, with_model=with_model, index_seconds=index_seconds, split=split, dataset=dataset
    )
    report["not_found"] = not_found_report(results, without_evidence)
    report["verdicts"] = verdict_report(results)
    report["faithfulness"] = faithfulness_report(config)
    return report


class EvidenceHidingBackend(DelegatingBackend):
    """A search backend that never returns the passages in ``hidden`` nor those of the documents in
    ``hidden_sources``: a question's supporting paragraphs removed from the corpus, while the
    topically close ones stay. Each search asks for ``HIDDEN_MARGIN`` more hits per hidden passage
    or document, so the ranking below them is what the smaller corpus would give (BM25 statistics
    still count the hidden passages; a small effect on a corpus of thousands)."""

    HIDDEN_MARGIN = 4  # hits asked for beyond the limit per hidden document (it has several passages)

    def __init__(self, backend: SearchBackend) -> None:
        super().__init__(backend)
        self.hidden: frozenset[str] = frozenset()
        self.hidden_sources: frozenset[str] = frozenset()

    def _shown(self, passage: Passage) -> bool:
        return passage.id not in self.hidden and not any(
            is_gold_source(passage.source, g) for g in self.hidden_sources
        )

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
    ) -> list[Passage]:
        extra = len(self.hidden) + self.HIDDEN_MARGIN * len(self.hidden_sources)
        hits = await super().search(
            collection, query, limit=limit + extra, broad=broad, meaning=meaning, corpus=corpus
        )
        return [p for p in hits if self._shown(p)][:limit]

    async def close(self) -> None:
        """The wrapped backend is closed by its owner."""


async def _run_without_evidence(
    questions: Sequence[EvalQuestion],
    config: CollectionsConfig,
    backend: SearchBackend,
    settings: ConferSettings,
) -> list[bool | None]:
    """The not-found suite: each question that has gold asked again with its gold paragraphs (or
    documents) hidden; ``True`` where Confer (rightly) said it found nothing that answers, ``None``
    for a question without gold (it is already one without evidence)."""
    hiding = EvidenceHidingBackend(backend)
    metrics = build_metrics()
    service = build_service(settings, config=config, backend=hiding, metrics=metrics)
    said_not_found: list[bool | None] = []
    try:
        for item in questions:
            if not item.has_gold:
                said_not_found.append(None)
                continue
            hiding.hidden = frozenset(item.gold_ids)
            hiding.hidden_sources = frozenset(() if item.gold_ids else item.gold_sources)
            answer = await service.answer(service.make_question(item.question), surface="cli")
            said_not_found.append(not answer.found)
    finally:
        if service.llm is not None:
            await service.llm.close()
    return said_not_found


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


def corpus_texts(config: CollectionsConfig) -> list[str]:
    """The text of every passage of the corpus, chunked as indexing chunks it."""
    texts = []
    for collection in config.collections:
        for path in resolve_sources(collection, config):
            try:
                documents = load_file(path, source=source_name(path, config.base_dir))
            except DocumentLoadError:
                continue
            for document in documents:
                texts += [p.text for p in chunk_document(document, collection=collection.name)]
    return texts


def faithfulness_report(config: CollectionsConfig, *, per_kind: int = 200) -> dict[str, Any]:
    """The verifier graded on a suite built from the corpus: true sentences and the same ones
    changed once per kind. What is true is known from construction, not from any check Confer
    runs, so this measures the check that admits sentences instead of trusting it."""
    cases = build_suite(corpus_texts(config), per_kind=per_kind)
    return grade(cases, lambda sentence, passage: is_supported(sentence, [passage]))


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


async def _run(
    questions: Sequence[EvalQuestion],
    config: CollectionsConfig,
    everything: Collection,
    backend: SearchBackend,
    settings: ConferSettings,
    progress: Callable[[int, int], None] | None,
    *,
    words: SearchBackend | None = None,
) -> list[QuestionResult]:
    """Each question through Confer (after its history, as a follow-up in one conversation), and
    through one index over the whole corpus: by words (with ``words``, a backend without
    embeddings over the same index), and by words and meaning."""
    metrics = build_metrics()
    service = build_service(settings, config=config, backend=backend, metrics=metrics)
    conversations = Conversations(memory=build_local_memory(), metrics=metrics)
    results = []
    try:
        for number, item in enumerate(questions, 1):
            asked = await ask_in_conversation(service, conversations, item, number)
            answer, seconds = asked.answer, asked.seconds
            one_index = await backend.search(everything, item.question, limit=max(KS))
            if words is not None:
                baseline = await words.search(everything, item.question, limit=max(KS))
                hybrid = one_index
            else:
                baseline, hybrid = one_index, []
            standalone: Answer | None = None
            if item.as_asked != item.question:  # the dataset's own standalone rewrite, asked alone
                standalone = await service.answer(service.make_question(item.question), surface="cli")
            valid, total, supported, cited = _judge(answer)
            results.append(
                QuestionResult(
                    question=item,
                    ranked=[p.id for p in answer.retrieved],
                    baseline_ranked=[p.id for p in baseline],
                    # every collection searched, in any round
                    chosen=list(
                        dict.fromkeys(
                            [
                                *(o.name for o in answer.outcomes),
                                *(c for r in answer.rounds for c in r.collections),
                            ]
                        )
                    ),
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
                    rounds=list(answer.rounds),
                    verdict=answer.verdict,
                    choice=answer.choice,
                    hybrid_ranked=[p.id for p in hybrid],
                    ranked_sources=[p.source for p in answer.retrieved],
                    baseline_sources=[p.source for p in baseline],
                    hybrid_sources=[p.source for p in hybrid],
                    cited_sources=[c.passage.source for c in answer.citations],
                    sections=[s.collection for s in answer.sections] if answer.found else [],
                    searched=asked.searched,
                    understood=asked.understood,
                    earlier_turns=asked.earlier_turns,
                    standalone_ranked=None if standalone is None else [p.id for p in standalone.retrieved],
                    standalone_sources=[] if standalone is None else [p.source for p in standalone.retrieved],
                    answer_sentences=answer_text(answer) if answer.found else "",
                    reply=plain_answer(answer, config),
                )
            )
            if progress is not None:
                progress(number, len(questions))
    finally:
        if service.llm is not None:
            await service.llm.close()
    return results


@dataclass(frozen=True)
class Asked:
    """A question's answer, the standalone question Confer researched, how it understood what was
    asked (``graph.research.followup``'s ``as_asked`` / ``heuristic`` / ``model``) and how many earlier turns
    its conversation held."""

    answer: Answer
    searched: str
    seconds: float  # the question itself, without its earlier turns
    understood: str = "as_asked"
    earlier_turns: int = 0


async def ask_in_conversation(
    service: ResearchService, conversations: Conversations, item: EvalQuestion, number: int
) -> Asked:
    """Ask the question's earlier user turns, then the question as asked, in one conversation of
    its own, as the terminal and the bots do (each turn prepared from the thread's memory,
    answered, remembered)."""
    if not item.user_turns:
        t0 = time.perf_counter()
        question = service.make_question(item.as_asked)
        answer = await service.answer(question, surface="cli")
        return Asked(answer, question.text, time.perf_counter() - t0)
    key = ThreadKey("eval", "eval", "questions", f"{number}:{item.id}")
    try:
        for text in item.user_turns:
            earlier = await conversations.prepare(service, key, text)
            await conversations.remember(key, earlier, await service.answer(earlier.question, surface="cli"))
        turns = len(await conversations.history(key))
        t0 = time.perf_counter()
        prepared = await conversations.prepare(service, key, item.as_asked)
        answer = await service.answer(prepared.question, surface="cli")
        seconds = time.perf_counter() - t0
        return Asked(answer, prepared.question.text, seconds, prepared.standalone.how, turns)
    finally:
        await conversations.forget(key)


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
            "rounds": _round_stats(results),
        },
        "followups": followup_report(results),
        "per_question": [_question_details(r) for r in results],
    }


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


def _round_stats(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """How many questions took how many rounds, and each round's wall-clock latency."""
    seconds: dict[int, list[float]] = defaultdict(list)
    for result in results:
        for number, research_round in enumerate(result.rounds, 1):
            seconds[number].append(research_round.seconds)
    return {
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
        "right": _right(result),
        "token_recall": token_recall(result.answer_sentences, result.question.reference),
        "sections": result.sections,
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
            f"(questions by rounds taken: {by_rounds}). Latency per round: {per_round}.",
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


def write_plots(report: dict[str, Any], out: Path) -> list[Path]:
    """Recall@k for Confer against the baseline by question type, and the latency distribution.
    Needs matplotlib (``pip install confer[eval]``); returns the files written."""
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


# Conversational evaluation: follow-ups built from a benchmark's questions.


@dataclass(frozen=True)
class ConversationCase:
    """Two turns built from one benchmark question, and the same second turn written in full.

    Comparison: the first turn asks the question of one side only, the follow-up is "And <other
    side>?"; written in full, it is the first turn with the other side in place of the first.
    Bridge: the first turn is "Tell me about <the entity the question names>.", the follow-up is the
    question with that entity replaced by "it"; written in full, it is the question itself. ``gold``
    is what the follow-up needs: the other side's passage, or all of the bridge question's."""

    id: str
    type: str
    first: str
    followup: str
    written: str
    gold: tuple[str, ...]


def conversation_cases(dataset: Path, split: str) -> list[ConversationCase]:
    """The cases that can be built from the split's comparison and bridge questions (the others,
    whose sides or entity the question text does not name literally, are left out)."""
    from graph import comparison_sides

    path = dataset / f"questions_{split}.jsonl"
    titles: dict[str, tuple[str, ...]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            titles[str(raw["id"])] = tuple(raw.get("gold_titles") or ())
    cases = []
    for item in load_questions(dataset, split):
        gold_titles = titles.get(item.id, ())
        if len(gold_titles) != len(item.gold_ids):
            continue
        text = " ".join(item.question.split())
        if item.type == "comparison":
            sides = comparison_sides(text)
            if len(sides) != 2:
                continue
            a, b = (side.strip(" ,;:?.!\"'") for side in sides)
            first = _only_side(text, a, b)
            other = [g for g, t in zip(item.gold_ids, gold_titles, strict=True) if _same(t, b)]
            if first is None or not other or not any(_same(t, a) for t in gold_titles):
                continue  # only sides that are the gold passages' titles: the turns then read cleanly
            first = re.sub(r"\s+both\b", "", first)
            written = first.replace(a, b, 1)
            cases.append(ConversationCase(item.id, "comparison", first, f"And {b}?", written, tuple(other)))
        elif item.type == "bridge":
            named = [t for t in gold_titles if re.search(rf"\b{re.escape(t)}\b", text)]
            if len(named) != 1:
                continue
            entity = named[0]
            followup = re.sub(rf"[\"“]?\b{re.escape(entity)}\b[\"”]?", "it", text, count=1)
            cases.append(
                ConversationCase(item.id, "bridge", f"Tell me about {entity}.", followup, text, item.gold_ids)
            )
    return cases


def _same(title: str, name: str) -> bool:
    return normalize_answer(title) == normalize_answer(name)


def _only_side(text: str, a: str, b: str) -> str | None:
    """The question asked of ``a`` alone: "A or B" / "A and B" (with what joins them) become "A"."""
    pattern = re.compile(
        rf"{re.escape(a)}(?P<q1>[\"”]?)\s*,?\s+(?:or|and|vs\.?|versus)\s+(?:the\s+)?[\"“]?{re.escape(b)}[\"”]?",
        re.IGNORECASE,
    )
    match = pattern.search(text)
    if match is None:
        return None
    return text[: match.start()] + a + match.group("q1") + text[match.end() :]


async def evaluate_conversations(
    dataset: Path,
    *,
    split: str,
    settings: ConferSettings,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Follow-up R@k (the follow-up researched with the first turn remembered) against the same
    turn written in full, per type; every turn runs through the graph the bots use."""
    from bot.chat.conversations import Conversations
    from bot.chat.memory import ThreadKey, build_local_memory

    config = load_collections(dataset / "collections.yaml")
    cases = conversation_cases(dataset, split)[:limit]
    tag = uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="confer-eval-") as tmp:
        run_settings = settings.model_copy(
            update={"data_dir": Path(tmp), "embeddings_cache": settings.vector_cache_path}
        )
        backend = build_backend(run_settings)
        collections = tuple(
            c.model_copy(update={"index": f"confer-eval-{tag}-{c.name}"}) for c in config.collections
        )
        config = config.model_copy(update={"collections": collections, "channels": {}})
        metrics = build_metrics()
        service = build_service(run_settings, config=config, backend=backend, metrics=metrics)
        conversations = Conversations(memory=build_local_memory(), metrics=metrics)
        try:
            for collection in collections:
                await index_collection(backend, collection, config)
            for number, case in enumerate(cases, 1):
                key = ThreadKey("eval", "eval", split, case.id)
                first = await conversations.prepare(service, key, case.first)
                await conversations.remember(key, first, await service.answer(first.question, surface="cli"))
                followup = await conversations.prepare(service, key, case.followup)
                asked = await service.answer(followup.question, surface="cli")
                written = await service.answer(service.make_question(case.written), surface="cli")
                rows.append(
                    {
                        "id": case.id,
                        "type": case.type,
                        "followup": case.followup,
                        "standalone": followup.question.text,
                        "written": case.written,
                        "gold": list(case.gold),
                        "followup_ranked": [p.id for p in asked.retrieved],
                        "written_ranked": [p.id for p in written.retrieved],
                    }
                )
                if progress is not None:
                    progress(number, len(cases))
        finally:
            await _drop_eval_indexes(backend, collections)
            await backend.close()
            if service.llm is not None:
                await service.llm.close()
    return conversation_report(rows)


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
