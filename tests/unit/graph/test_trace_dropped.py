"""The sentences an answer did not keep, in its trace, each with its text and why: a model's
sentences that verification dropped (noted while the graph runs), and the candidate sentences an
extractive answer passed over, with the rule that left each out."""

import json
from collections.abc import AsyncGenerator
from typing import Any

from graph.answer.drafting import draft_with_llm
from graph.answer.streaming import SentenceVerifier
from graph.answer.synthesis import build_answer, synthesize_extractive
from graph.context import ResearchLimits
from graph.llm.port import SchemaT
from graph.models import Answer, Claim, Plan, Question, ResearchTask
from graph.trace import (
    MAX_PASSED,
    MAX_SENTENCE_CHARS,
    DroppedSentence,
    TraceRecorder,
    decided,
    note_dropped,
    passed_over,
    recording,
    trace_of,
)
from retrieval.passages import Passage
from tests.unit.graph.test_synthesis import A1, B1, _finding, _p, _plan

LEAVE = Passage(
    id="p1",
    collection="people",
    doc_id="d",
    source="leave.md",
    title="Leave",
    text="Parental leave is 18 weeks at full pay.",
    score=1.0,
)


class Drafts:
    """A model whose draft is ``claims`` (the drafting schema's own shape)."""

    def __init__(self, claims: list[dict[str, Any]]) -> None:
        self.claims = claims

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        return schema.model_validate_json(json.dumps({"claims": self.claims}))

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        yield ""

    async def close(self) -> None:
        pass


async def test_each_draft_sentence_verification_drops_is_noted_with_its_text_and_why() -> None:
    drafts = Drafts(
        [
            {"text": "Parental leave is 18 weeks at full pay.", "passages": [1]},
            {"text": "Parental leave is 30 weeks at full pay.", "passages": [1]},  # a number changed
            {"text": "Leave   is paid by the state.", "passages": [7]},  # cites no passage shown
        ]
    )
    with recording(TraceRecorder()) as recorder:
        claims, reasons = await draft_with_llm(drafts, "How long is leave?", [LEAVE], limit=3, time_budget=5)
    assert [c.text for c in claims] == ["Parental leave is 18 weeks at full pay."]
    assert reasons == ("number", "unsupported")  # what the metrics count, as before
    assert recorder.dropped == [
        DroppedSentence(
            reason="number", text="Parental leave is 30 weeks at full pay.", collections=("people",)
        ),
        DroppedSentence(reason="unsupported", text="Leave is paid by the state.", collections=("people",)),
    ]
    # Outside a question's research (an evaluation, a benchmark) nothing is noted anywhere.
    await draft_with_llm(drafts, "How long is leave?", [LEAVE], limit=3, time_budget=5)
    note_dropped("Leave is 40 weeks.", "number", ("people",))
    assert len(recorder.dropped) == 2


async def test_each_written_sentence_verification_drops_is_noted_with_what_it_was_checked_against() -> None:
    released: list[str] = []
    sources = {1: LEAVE, 2: A1}
    with recording(TraceRecorder()) as recorder:
        verifier = SentenceVerifier(
            Drafts([]), sources, deadline=0.0, release=lambda s: released.append(s.text)
        )
        verifier.add("Parental leave is 18 weeks at full pay.", (1,))
        verifier.add("Parental leave is 26 weeks at full pay.", (1,))
        verifier.add("Leave is generous.", ())  # cites nothing: checked against nothing
        await verifier.finish()
    assert released == ["Parental leave is 18 weeks at full pay."]
    assert recorder.dropped == [
        DroppedSentence(
            reason="number", text="Parental leave is 26 weeks at full pay.", collections=("people",)
        ),
        # It may say anything the model was shown: only a place that may search all of it sees it.
        DroppedSentence(reason="unsupported", text="Leave is generous.", collections=("eng", "people")),
    ]


def test_an_extractive_answer_lists_the_candidates_it_passed_over_and_the_rule() -> None:
    words = ["alpha beta", "gamma delta", "epsilon zeta", "eta theta", "iota kappa"]
    strong = [
        Claim(text=f"Deploys roll out in three waves, {w}.", passage_ids=("a1",), coverage=0.95)
        for w in words
    ]
    passage = _p("a1", "eng", " ".join(c.text for c in strong), 9.0)
    twin = _p("b2", "sec", "Deploys roll out in three waves, alpha beta!", 8.0)
    findings = [
        _finding("eng", [passage], strong),
        _finding("sec", [twin], [Claim(text=twin.text, passage_ids=("b2",), coverage=0.95)]),
    ]
    answer = synthesize_extractive(_plan("eng", "sec"), findings, ResearchLimits(answer_sentences=3))
    said = [s.text for section in answer.sections for s in section.sentences]
    assert said == [c.text for c in strong[:3]]
    assert answer.passed_over == (
        DroppedSentence(reason="duplicate", text=twin.text, collections=("sec",)),
        DroppedSentence(reason="enough", text=strong[3].text, collections=("eng",)),
        DroppedSentence(reason="enough", text=strong[4].text, collections=("eng",)),
    )
    decision = decided(answer).decision
    assert decision is not None and decision.dropped == answer.passed_over


def test_a_sentence_its_source_does_not_support_is_listed_as_unsupported() -> None:
    claims = [
        (Claim(text="Deploys roll out in three waves.", passage_ids=("a1",), coverage=0.9), "eng"),
        (
            Claim(text="Quantum chairs levitate under marketing budgets.", passage_ids=("a1",), coverage=0.9),
            "eng",
        ),
    ]
    answer, dropped = build_answer(_plan("eng"), [_finding("eng", [A1], [])], claims)
    assert dropped == 1
    assert answer.passed_over == (
        DroppedSentence(
            reason="unsupported",
            text="Quantum chairs levitate under marketing budgets.",
            collections=("eng",),
        ),
    )


def test_the_passed_over_are_few_each_once_and_cut_to_a_readable_length() -> None:
    long = Claim(text="word " * 200, passage_ids=("a1",), coverage=0.0)
    items = [(long, "eng", "floor")] * 3 + [
        (Claim(text=f"Sentence {n}.", passage_ids=("b1",), coverage=0.0), "sec", "enough") for n in range(20)
    ]
    listed = passed_over(items, used={"Sentence 0."})
    assert len(listed) == MAX_PASSED
    assert len(listed[0].text) == MAX_SENTENCE_CHARS and listed[0].text.endswith("…")
    assert [d.text for d in listed[1:3]] == ["Sentence 1.", "Sentence 2."]  # once each; "used" not listed


def test_the_trace_lists_the_models_dropped_sentences_then_the_passed_over() -> None:
    recorder = TraceRecorder()
    with recording(recorder):
        note_dropped("Leave is 30 weeks.", "number", ("people",))
    answer = decided(
        Answer(
            mode="extractive",
            kind="factual",
            passed_over=(DroppedSentence(reason="floor", text=B1.text, collections=("sec",)),),
        )
    )
    trace = trace_of(recorder, Question(text="q", allowed=("people", "sec")), None, (), answer)
    assert trace.decision is not None
    assert [(d.reason, d.text) for d in trace.decision.dropped] == [
        ("number", "Leave is 30 weeks."),
        ("floor", B1.text),
    ]
    narrow = trace.within(("sec",)).decision
    assert narrow is not None and [d.reason for d in narrow.dropped] == ["floor"]


def test_when_nothing_answers_the_sentences_that_did_not_cover_the_question_are_listed() -> None:
    question = (
        "How many vacation days do interns get at the Lisbon office under the Kestrel relocation program?"
    )
    plan = Plan(
        kind="factual",
        routing="automatic",
        tasks=(ResearchTask(collection="people", queries=("q",), question=question),),
    )
    passage = _p(
        "p1",
        "people",
        "Interns get vacation days every month. Vacation days for interns are approved by managers. "
        "Relocation is handled by HR.",
        5.0,
    )
    answer = synthesize_extractive(plan, [_finding("people", [passage], [])], ResearchLimits())
    assert not answer.found and not answer.closest
    assert answer.passed_over == (
        DroppedSentence(
            reason="not_covered", text="Interns get vacation days every month.", collections=("people",)
        ),
        DroppedSentence(
            reason="not_covered",
            text="Vacation days for interns are approved by managers.",
            collections=("people",),
        ),
    )
    decision = decided(answer).decision
    assert decision is not None and decision.outcome == "nothing" and decision.dropped == answer.passed_over
