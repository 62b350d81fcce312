"""The trace of an answer: how Confer found it, as data (nothing in it is platform-specific).

Every question records one ``AnswerTrace``: the question as asked and as researched (a follow-up's
rewrite), the plan (its kind, the collections chosen and why: routing scores, a name, the
channel's defaults, the model's plan), each research round with every branch's queries, status,
time and top hits (word, meaning and fused scores), the follow-up leads and why they were followed,
the answer's decision (found, closest or nothing, with its probability when the answer step gives
one; the sentences kept and those dropped, with why) and each model call (purpose, model, latency,
tokens, outcome). It travels on ``Answer.trace``; ``bot/`` shows it on demand and stores it.

A ``TraceRecorder`` collects it while the graph runs (it travels in the graph's context; model
calls reach it through a context variable, since the model client sees no graph context), and
``trace_of`` builds the trace once the answer is ready. ``AnswerTrace.within`` keeps only what a
place may search: a trace never shows a passage, query or score of a collection outside it.

The answer step sets ``Answer.decision`` itself when it decides with a probability; otherwise
``decided`` derives the decision from the answer, with the answer judge's outcome and probability
when it judged (``Answer.judgement``). This module imports nothing
from the graph at run time (``graph.models`` imports it), so its helpers take the graph's values
by duck type, annotated for the type checker only.
"""

import contextlib
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from graph.models import Answer, Claim, Finding, Plan, Question, ResearchRound, ResearchTask

HITS_PER_BRANCH = 5  # the top hits of a branch a trace keeps
MAX_SENTENCE_CHARS = 400  # a kept or dropped sentence, as the trace keeps it (longer ones cut, "…")
# The candidate sentences an extractive answer passed over that a trace lists: the best ranked,
# after those it chose and then let go (the rest of a long ranking says nothing more).
MAX_PASSED = 8

Outcome = Literal["found", "closest", "nothing"]
# Why a collection was searched: named with ``in:``, the channel's default, its routing score, the
# question names it, no routing score at all (every allowed collection), the model's plan added it,
# or nothing answered and this collection's evidence covered the question.
Choice = Literal["requested", "channel_default", "routing", "named", "all", "model", "elsewhere"]
LeadSource = Literal["rules", "model"]
# What a model call was for: the plan, a branch's draft, the follow-up leads, the answer (written
# and streamed), a sentence's verification, a follow-up question's rewrite; "other" for the rest.
Purpose = Literal["plan", "draft", "follow_ups", "answer", "verify", "rewrite", "suggest", "other"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TraceHit(_Frozen):
    """One passage a branch found: ``word`` and ``meaning`` are a hybrid search's two scores before
    fusion (``None`` from a search by words alone), ``fused`` the score it ranked by."""

    passage_id: str
    collection: str
    title: str
    fused: float
    word: float | None = None
    meaning: float | None = None


class TraceBranch(_Frozen):
    collection: str
    round: int
    queries: tuple[str, ...]
    status: str
    seconds: float
    reason: str = ""
    entity: str = ""  # a follow-up's subject
    hits: tuple[TraceHit, ...] = ()
    found: int = 0  # passages the branch found (``hits`` keeps the top ones)


class ChosenCollection(_Frozen):
    name: str
    why: Choice
    score: float | None = None  # the routing probe's score, when there was one


class PlanTrace(_Frozen):
    kind: str
    routing: str
    collections: tuple[ChosenCollection, ...] = ()
    # The routing probe's score of every collection the place may search (highest first), so the
    # trace shows the collections that were not chosen too.
    scores: tuple[tuple[str, float], ...] = ()


class TraceLead(_Frozen):
    """A follow-up: the entity looked for, its query, the collection it was routed to, and why (the
    rules or the model; ``origin``: the passage that named it)."""

    entity: str
    query: str
    collection: str
    source: LeadSource
    origin: str = ""


class TraceRound(_Frozen):
    number: int
    seconds: float
    branches: tuple[TraceBranch, ...] = ()
    leads: tuple[TraceLead, ...] = ()  # the follow-ups this round's findings led to


class ModelCall(_Frozen):
    purpose: Purpose
    model: str
    seconds: float
    outcome: str  # "ok", or why not: "timeout", "rate_limited", "server_error", …
    prompt_tokens: int = 0
    completion_tokens: int = 0


class KeptSentence(_Frozen):
    text: str
    collection: str
    passage_ids: tuple[str, ...] = ()


class DroppedSentence(_Frozen):
    """A sentence the answer step did not keep, and why: the guard or verdict that dropped a
    model's sentence (``number``, ``judge``, …), or the rule that left a candidate sentence out of
    an extractive answer (``duplicate``, ``floor``, …). ``collections``: those of the passages it
    was drawn from or checked against; a place that may not search every one of them is not shown
    it. ``text`` is empty where only the reason is known, and then only."""

    reason: str
    text: str = ""
    collections: tuple[str, ...] = ()


class AnswerDecision(_Frozen):
    """What the answer step decided: the question is answered (``found``), only the closest
    sentences are offered (``closest``), or nothing related was found (``nothing``);
    ``probability`` is the answer step's calibrated probability that the kept sentences answer the
    question, when it gives one."""

    outcome: Outcome
    probability: float | None = None
    kept: tuple[KeptSentence, ...] = ()
    dropped: tuple[DroppedSentence, ...] = ()


class AnswerTrace(_Frozen):
    question: str  # as researched
    asked: str = ""  # as typed, when a follow-up was rewritten into ``question``
    plan: PlanTrace
    rounds: tuple[TraceRound, ...] = ()
    decision: AnswerDecision | None = None
    model_calls: tuple[ModelCall, ...] = ()
    seconds: float = 0.0
    trace_id: str = ""  # the OpenTelemetry trace id, when spans are exported
    allowed: tuple[str, ...] = ()  # the collections the asker's place could search

    def _named(self) -> set[str]:
        """Every collection the trace names anywhere."""
        named = {c.name for c in self.plan.collections} | {name for name, _ in self.plan.scores}
        named |= {b.collection for r in self.rounds for b in r.branches}
        named |= {h.collection for r in self.rounds for b in r.branches for h in b.hits}
        named |= {lead.collection for r in self.rounds for lead in r.leads}
        named |= set(self.allowed)
        if self.decision is not None:
            named |= {k.collection for k in self.decision.kept}
            named |= {c for d in self.decision.dropped for c in d.collections}
            if any(d.text and not d.collections for d in self.decision.dropped):
                named.add("")  # a sentence no place can be checked against: never kept as it is
        return named

    @property
    def collections(self) -> tuple[str, ...]:
        """Every collection a branch searched, in the order first searched."""
        return tuple(dict.fromkeys(b.collection for r in self.rounds for b in r.branches))

    def within(self, allowed: Collection[str]) -> "AnswerTrace":
        """This trace with nothing from a collection outside ``allowed``: its branches, hits,
        leads, routing scores and sentences are left out (model calls name no collection)."""
        keep = set(allowed)
        if keep.issuperset(self._named()):
            return self  # nothing to leave out: no copy (every researched answer is kept within)
        plan = self.plan.model_copy(
            update={
                "collections": tuple(c for c in self.plan.collections if c.name in keep),
                "scores": tuple(s for s in self.plan.scores if s[0] in keep),
            }
        )
        rounds = tuple(
            r.model_copy(
                update={
                    "branches": tuple(
                        b.model_copy(update={"hits": tuple(h for h in b.hits if h.collection in keep)})
                        for b in r.branches
                        if b.collection in keep
                    ),
                    "leads": tuple(lead for lead in r.leads if lead.collection in keep),
                }
            )
            for r in self.rounds
        )
        decision = self.decision
        if decision is not None:
            decision = decision.model_copy(
                update={
                    "kept": tuple(k for k in decision.kept if k.collection in keep),
                    "dropped": tuple(
                        d
                        for d in decision.dropped
                        if keep.issuperset(d.collections) and (d.collections or not d.text)
                    ),
                }
            )
        return self.model_copy(
            update={
                "plan": plan,
                "rounds": rounds,
                "decision": decision,
                "allowed": tuple(c for c in self.allowed if c in keep),
            }
        )


@dataclass
class TraceRecorder:
    """One question's trace while the graph runs: nodes note what they decide, branches what
    they found, the model client each call. Appends only; read once by ``trace_of``."""

    started: float = field(default_factory=time.monotonic)
    scores: dict[str, float] = field(default_factory=dict)
    chosen: dict[str, Choice] = field(default_factory=dict)
    branches: list[tuple[int, TraceBranch]] = field(default_factory=list)  # (order noted, branch)
    leads: dict[int, list[TraceLead]] = field(default_factory=dict)
    model_calls: list[ModelCall] = field(default_factory=list)
    dropped: list[DroppedSentence] = field(default_factory=list)  # the model's, dropped by verification

    def plan(self, plan: "Plan", scores: dict[str, float], ratio: float) -> None:
        """The rule-based plan and the routing probe's scores (empty when no probe ran): with
        automatic routing a collection was chosen by its score when it is within ``ratio`` of the
        best one, else because the question names it."""
        self.scores.update(scores)
        floor = ratio * max(scores.values(), default=0.0)
        for task in plan.tasks:
            scored = task.collection in scores and scores[task.collection] >= floor
            self.chosen.setdefault(task.collection, _choice(plan.routing, scored))

    def added(self, tasks: Iterable["ResearchTask"], why: Choice) -> None:
        """Collections added to the plan later: by the model's plan, or because they cover the
        question when nothing else did."""
        for task in tasks:
            self.chosen.setdefault(task.collection, why)

    def branch(self, task: "ResearchTask", finding: "Finding") -> None:
        hits = tuple(
            TraceHit(
                passage_id=p.id,
                collection=p.collection,
                title=p.title,
                fused=round(p.score, 4),
                word=None if p.lexical is None else round(p.lexical, 4),
                meaning=None if p.semantic is None else round(p.semantic, 4),
            )
            for p in finding.passages[:HITS_PER_BRANCH]
        )
        self.branches.append(
            (
                len(self.branches),
                TraceBranch(
                    collection=task.collection,
                    round=task.round,
                    queries=task.queries,
                    status=finding.status,
                    seconds=finding.seconds,
                    reason=finding.reason,
                    entity=task.entity,
                    hits=hits,
                    found=len(finding.passages),
                ),
            )
        )

    def elsewhere(self, tasks: Sequence["ResearchTask"], findings: Sequence["Finding"]) -> None:
        """Collections searched when nothing answered, whose evidence covers the question."""
        self.added(tasks, "elsewhere")
        for task, finding in zip(tasks, findings, strict=True):
            self.branch(task, finding)

    def follow_ups(self, number: int, tasks: Iterable["ResearchTask"], source: LeadSource) -> None:
        """The follow-ups round ``number``'s findings led to (searched in the next round)."""
        self.leads.setdefault(number, []).extend(
            TraceLead(
                entity=t.entity,
                query=t.queries[0] if t.queries else "",
                collection=t.collection,
                source=source,
                origin=t.origin,
            )
            for t in tasks
        )

    def model_call(self, call: ModelCall) -> None:
        self.model_calls.append(call)

    def drop(self, sentence: DroppedSentence) -> None:
        self.dropped.append(sentence)


_RECORDER: ContextVar[TraceRecorder | None] = ContextVar("confer_trace_recorder", default=None)


@contextlib.contextmanager
def recording(recorder: TraceRecorder) -> Iterator[TraceRecorder]:
    """Model calls made inside (in this task and the tasks it starts) are noted in ``recorder``."""
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        try:
            _RECORDER.reset(token)
        except ValueError:  # left in another context than it was entered (a generator closed late)
            _RECORDER.set(None)


_PURPOSE: ContextVar[Purpose] = ContextVar("confer_model_purpose", default="answer")


@contextlib.contextmanager
def calling(purpose: Purpose) -> Iterator[None]:
    """Model requests made inside are for ``purpose`` (outside any: the streamed answer)."""
    token = _PURPOSE.set(purpose)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def current_purpose() -> Purpose:
    """What the model request being made now is for."""
    return _PURPOSE.get()


def note_model_call(
    *, model: str, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
) -> None:
    """Note one model request in the question's trace (nothing when no question is recording)."""
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder.model_call(
            ModelCall(
                purpose=_PURPOSE.get(),
                model=model,
                seconds=round(seconds, 4),
                outcome=outcome,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        )


def cut(text: str) -> str:
    """A sentence as a trace keeps it: at most ``MAX_SENTENCE_CHARS``, a cut one ending in "…"."""
    return text if len(text) <= MAX_SENTENCE_CHARS else text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


def dropped_sentence(text: str, reason: str, collections: Iterable[str]) -> DroppedSentence:
    """A dropped sentence as the trace keeps it: its text cut, and none without the collections
    it came from (a text no place can be checked against is never shown)."""
    names = tuple(sorted(set(collections)))
    return DroppedSentence(
        reason=reason, text=cut(" ".join(text.split())) if names else "", collections=names
    )


def passed_over(
    items: Iterable[tuple["Claim", str, str]],
    *,
    first: Sequence[DroppedSentence] = (),
    used: Collection[str] = (),
) -> tuple[DroppedSentence, ...]:
    """The candidate sentences an extractive answer passed over, for its trace: ``first``, then
    each of ``items`` (claim, its collection, the rule that left it out) whose text it does not
    say (``used``) or list already, up to ``MAX_PASSED`` in all."""
    kept = list(first)
    seen = {d.text for d in kept} | {cut(" ".join(text.split())) for text in used}
    for claim, collection, reason in items:
        if len(kept) >= MAX_PASSED:
            break
        dropped = dropped_sentence(claim.text, reason, (collection,))
        if dropped.text not in seen:
            seen.add(dropped.text)
            kept.append(dropped)
    return tuple(kept)


def note_dropped(text: str, reason: str, collections: Iterable[str]) -> None:
    """Note a model's sentence that verification dropped, and why, in the question's trace
    (nothing when no question is recording). ``collections``: of the passages it was checked
    against, or, when it cites none, every passage the model was shown."""
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder.drop(dropped_sentence(text, reason, collections))


_PURPOSES: dict[str, Purpose] = {
    "PlanOutput": "plan",
    "DraftOutput": "draft",
    "ReflectOutput": "follow_ups",
    "JudgeOutput": "verify",
    "RewriteOutput": "rewrite",
    "SuggestOutput": "suggest",
}


def purpose_of(schema_name: str) -> Purpose:
    """A structured call's purpose, from the schema its answer is parsed into."""
    return _PURPOSES.get(schema_name, "other")


def decided(answer: "Answer") -> "Answer":
    """The answer with its decision: the answer step's own when it set one, else derived from
    the answer (its sentences kept, the candidate sentences it passed over and why:
    ``Answer.passed_over``), with the answer judge's outcome and probability when it judged
    (``Answer.judgement``). The model's sentences that verification dropped are noted while the
    graph runs (``note_dropped``) and join the decision in ``trace_of``."""
    if answer.decision is not None or answer.mode == "direct":
        return answer
    by_number = {c.n: c.passage for c in answer.citations}
    kept = tuple(
        KeptSentence(
            text=cut(s.text),
            collection=section.collection or _collection_of(s.citations, by_number),
            passage_ids=tuple(by_number[n].id for n in s.citations if n in by_number),
        )
        for section in answer.sections
        for s in section.sentences
        if s.text  # a derived sentence is worded by ``bot/`` later
    )
    outcome: Outcome = "found" if answer.found else "closest" if answer.closest else "nothing"
    probability = None
    judged = answer.judgement  # the extractive answer judge's reading, when it judged
    if judged is not None:
        outcome = "found" if judged.outcome == "answers" else judged.outcome
        probability = round(judged.probability, 4)
    decision = AnswerDecision(
        outcome=outcome,
        probability=probability,
        kept=kept,
        dropped=answer.passed_over,
    )
    return answer.model_copy(update={"decision": decision})


def _choice(routing: str, scored: bool) -> Choice:
    if routing == "explicit":
        return "requested"
    if routing == "channel_default":
        return "channel_default"
    if routing == "all":
        return "all"
    return "routing" if scored else "named"  # automatic: by its score, or the question names it


def _collection_of(numbers: Sequence[int], by_number: Mapping[int, object]) -> str:
    for n in numbers:
        passage = by_number.get(n)
        if passage is not None:
            return str(getattr(passage, "collection", ""))
    return ""


def trace_of(
    recorder: TraceRecorder,
    question: "Question",
    plan: "Plan | None",
    rounds: Sequence["ResearchRound"],
    answer: "Answer",
) -> AnswerTrace:
    """The question's trace, within the collections its place may search."""
    plan_trace = PlanTrace(kind=answer.kind, routing=plan.routing if plan else "all")
    if plan is not None:
        plan_trace = plan_trace.model_copy(
            update={
                "collections": tuple(
                    ChosenCollection(name=name, why=why, score=recorder.scores.get(name))
                    for name, why in recorder.chosen.items()
                ),
                "scores": tuple(sorted(recorder.scores.items(), key=lambda item: -item[1])),
            }
        )
    numbers = sorted({b.round for _, b in recorder.branches} | set(recorder.leads))
    trace_rounds = tuple(
        TraceRound(
            number=n,
            seconds=rounds[n - 1].seconds if 0 < n <= len(rounds) else 0.0,
            branches=tuple(b for _, b in sorted(recorder.branches, key=lambda item: item[0]) if b.round == n),
            leads=tuple(recorder.leads.get(n, ())),
        )
        for n in numbers
    )
    decision = answer.decision
    if decision is not None and recorder.dropped:  # the model's dropped sentences, first
        decision = decision.model_copy(update={"dropped": (*recorder.dropped, *decision.dropped)})
    trace = AnswerTrace(
        question=question.text,
        asked=question.asked if question.asked != question.text else "",
        plan=plan_trace,
        rounds=trace_rounds,
        decision=decision,
        model_calls=tuple(recorder.model_calls),
        seconds=round(time.monotonic() - recorder.started, 4),
        allowed=question.allowed,
    )
    return trace.within(question.allowed)
