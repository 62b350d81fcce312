"""The suites ``confer eval`` runs, each through the graph the bots use, over throw-away indexes
of a benchmark directory's collections:

- the questions: retrieval, routing, citation, answer and latency metrics, against one BM25 index
  over the whole corpus in the same run; a question with a ``history`` is asked after its earlier
  user turns, in one conversation, as the bots and the terminal ask a follow-up;
- the same questions with their evidence hidden (should Confer say "not found"?);
- faithfulness: the verifier graded on sentences built from the corpus (``faithfulness.py``);
- conversations: follow-ups built from a benchmark's comparison and bridge questions, against the
  same turn written in full."""

import contextlib
import json
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.chat.conversations import Conversations, answer_text
from bot.chat.memory import ThreadKey, build_local_memory
from bot.chat.render import plain_answer
from bot.chat.service import ResearchService
from bot.evaluation.datasets import EvalQuestion, corpus_texts, load_questions
from bot.evaluation.faithfulness import build_suite, grade
from bot.evaluation.report import questions_report
from bot.evaluation.scoring import (
    KS,
    QuestionResult,
    conversation_report,
    is_gold_source,
    judge_answer,
    normalize_answer,
    not_found_report,
    verdict_report,
)
from bot.metrics import build_metrics
from bot.settings import ConferSettings
from bot.wiring import build_backend, build_service
from graph import Answer, is_supported
from retrieval.audience import Audience
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.collections import Collection, CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import Passage

BASELINE = "all"


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
            results = await _run_questions(
                questions, config, everything, backend, run_settings, progress, words=words
            )
            without_evidence, hidden_answers = await _run_without_evidence(
                questions, config, backend, run_settings
            )
        finally:
            await _drop_eval_indexes(backend, (*collections, everything))
            await backend.close()
            if words is not None:
                await words.close()
    with_model = bool(settings.llm_model)
    report = questions_report(
        results, with_model=with_model, index_seconds=index_seconds, split=split, dataset=dataset
    )
    report["not_found"] = not_found_report(results, without_evidence)
    for line, said, hidden_answer in zip(
        report["per_question"], without_evidence, hidden_answers, strict=True
    ):
        line["evidence_hidden"] = None if said is None else {"not_found": said, "answer": hidden_answer}
    report["verdicts"] = verdict_report(results)
    report["faithfulness"] = faithfulness_report(config)
    return report


async def _run_questions(
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
    service = build_service(uncached(settings), config=config, backend=backend, metrics=metrics)
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
            valid, total, supported, cited = judge_answer(answer)
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


@contextlib.asynccontextmanager
async def throwaway_indexes(
    dataset: Path, settings: ConferSettings, prefix: str
) -> AsyncIterator[tuple[CollectionsConfig, SearchBackend, ConferSettings]]:
    """A benchmark's collections indexed under throw-away aliases (``<prefix>-<tag>-<name>``, so an
    Elasticsearch cluster's own collections are never touched) in a temporary data folder, passage
    vectors kept in the configured cache (a second run embeds nothing again): the collections, the
    backend searching them and the settings to build a service with (the answer cache off). The
    aliases are dropped afterwards."""
    config = load_collections(dataset / "collections.yaml")
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix=f"{prefix}-") as tmp:
        run_settings = settings.model_copy(
            update={"data_dir": Path(tmp), "embeddings_cache": settings.vector_cache_path}
        )
        backend = build_backend(run_settings)
        collections = tuple(
            c.model_copy(update={"index": f"{prefix}-{tag}-{c.name}"}) for c in config.collections
        )
        config = config.model_copy(update={"collections": collections, "channels": {}})
        try:
            for collection in collections:
                await index_collection(backend, collection, config)
            yield config, backend, uncached(run_settings)
        finally:
            await _drop_eval_indexes(backend, collections)
            await backend.close()


def uncached(settings: ConferSettings) -> ConferSettings:
    """The settings with the answer cache off: every evaluated question is researched (a cached
    answer would carry another run's evidence and time)."""
    return settings.model_copy(update={"cache": "off"})


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
        audience: Audience | None = None,
    ) -> list[Passage]:
        extra = len(self.hidden) + self.HIDDEN_MARGIN * len(self.hidden_sources)
        hits = await super().search(
            collection,
            query,
            limit=limit + extra,
            broad=broad,
            meaning=meaning,
            corpus=corpus,
            audience=audience,
        )
        return [p for p in hits if self._shown(p)][:limit]

    async def close(self) -> None:
        """The wrapped backend is closed by its owner."""


async def _run_without_evidence(
    questions: Sequence[EvalQuestion],
    config: CollectionsConfig,
    backend: SearchBackend,
    settings: ConferSettings,
) -> tuple[list[bool | None], list[str]]:
    """The not-found suite: each question that has gold asked again with its gold paragraphs (or
    documents) hidden; ``True`` where Confer (rightly) said it found nothing that answers, ``None``
    for a question without gold (it is already one without evidence); and what it answered."""
    hiding = EvidenceHidingBackend(backend)
    metrics = build_metrics()
    service = build_service(uncached(settings), config=config, backend=hiding, metrics=metrics)
    said_not_found: list[bool | None] = []
    answers: list[str] = []
    try:
        for item in questions:
            if not item.has_gold:
                said_not_found.append(None)
                answers.append("")
                continue
            hiding.hidden = frozenset(item.gold_ids)
            hiding.hidden_sources = frozenset(() if item.gold_ids else item.gold_sources)
            answer = await service.answer(service.make_question(item.question), surface="cli")
            said_not_found.append(not answer.found)
            answers.append(plain_answer(answer, config) if answer.found else "")
    finally:
        if service.llm is not None:
            await service.llm.close()
    return said_not_found, answers


def faithfulness_report(config: CollectionsConfig, *, per_kind: int = 200) -> dict[str, Any]:
    """The verifier graded on a suite built from the corpus: true sentences and the same ones
    changed once per kind. What is true is known from construction, not from any check Confer
    runs, so this measures the check that admits sentences instead of trusting it."""
    cases = build_suite(corpus_texts(config), per_kind=per_kind)
    return grade(cases, lambda sentence, passage: is_supported(sentence, [passage]))


async def _drop_eval_indexes(backend: SearchBackend, collections: Sequence[Collection]) -> None:
    """Elasticsearch keeps indexes after the run unless they are dropped."""
    for collection in collections:
        await backend.drop_collection(collection)


# The conversation suite: follow-ups built from a benchmark's questions.


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
    cases = conversation_cases(dataset, split)[:limit]
    rows: list[dict[str, Any]] = []
    async with throwaway_indexes(dataset, settings, "confer-eval") as (config, backend, run_settings):
        metrics = build_metrics()
        service = build_service(run_settings, config=config, backend=backend, metrics=metrics)
        conversations = Conversations(memory=build_local_memory(), metrics=metrics)
        try:
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
            if service.llm is not None:
                await service.llm.close()
    return conversation_report(rows)
