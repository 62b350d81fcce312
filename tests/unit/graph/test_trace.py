"""The trace of an answer: kept within a place's collections, and the decision read from an answer
when the answer step set none."""

from graph.models import Answer, AnswerSection, AnswerSentence, Citation, Judgement
from graph.trace import (
    AnswerDecision,
    AnswerTrace,
    ChosenCollection,
    DroppedSentence,
    KeptSentence,
    PlanTrace,
    TraceBranch,
    TraceHit,
    TraceLead,
    TraceRound,
    decided,
)
from retrieval.passages import Passage


def _hit(collection: str, n: int) -> TraceHit:
    return TraceHit(
        passage_id=f"p_{collection}{n}", collection=collection, title=f"{collection} {n}", fused=0.5
    )


def _trace() -> AnswerTrace:
    branches = tuple(
        TraceBranch(collection=c, round=1, queries=(f"q {c}",), status="ok", seconds=0.1, hits=(_hit(c, 1),))
        for c in ("people", "security")
    )
    return AnswerTrace(
        question="q",
        plan=PlanTrace(
            kind="factual",
            routing="automatic",
            collections=(
                ChosenCollection(name="people", why="routing"),
                ChosenCollection(name="security", why="named"),
            ),
            scores=(("people", 0.9), ("security", 0.4)),
        ),
        rounds=(
            TraceRound(
                number=1,
                seconds=0.1,
                branches=branches,
                leads=(TraceLead(entity="Ada", query="Ada", collection="people", source="rules"),),
            ),
        ),
        decision=AnswerDecision(
            outcome="found",
            kept=(
                KeptSentence(text="Leave is 20 weeks.", collection="people"),
                KeptSentence(text="Keys are required.", collection="security"),
            ),
            dropped=(
                DroppedSentence(reason="number", text="Leave is 30 weeks.", collections=("people",)),
                # a model's sentence checked against both: shown only where both may be searched
                DroppedSentence(
                    reason="judge", text="Keys last 40 weeks.", collections=("people", "security")
                ),
                DroppedSentence(reason="unsupported"),  # no text: shown everywhere
            ),
        ),
        allowed=("people", "security"),
    )


def test_a_trace_within_a_place_keeps_nothing_of_another_collection() -> None:
    shown = _trace().within(("security",))
    dumped = shown.model_dump_json()
    assert (
        "people" not in dumped
        and "20 weeks" not in dumped
        and "30 weeks" not in dumped
        and "Ada" not in dumped
        and "40 weeks" not in dumped
    )
    assert shown.collections == ("security",)
    assert shown.decision is not None and [k.text for k in shown.decision.kept] == ["Keys are required."]
    assert shown.decision.dropped == (DroppedSentence(reason="unsupported"),)
    assert _trace().within(("people", "security")) == _trace()


def _passage(n: str, collection: str) -> Passage:
    return Passage(
        id=n, collection=collection, doc_id=n, source=f"{n}.md", title=n, text="Leave is 20 weeks."
    )


def test_the_decision_is_read_from_an_answer_that_set_none() -> None:
    answer = Answer(
        mode="extractive",
        kind="factual",
        sections=(
            AnswerSection(
                collection="people", sentences=(AnswerSentence(text="Leave is 20 weeks.", citations=(1,)),)
            ),
        ),
        citations=(Citation(n=1, passage=_passage("p_1", "people"), quote="Leave is 20 weeks."),),
        drop_reasons=("negation",),  # a model's: noted while the graph ran, not read from here
        passed_over=(DroppedSentence(reason="floor", text="Leave is good.", collections=("people",)),),
    )
    decision = decided(answer).decision
    assert decision is not None and decision.outcome == "found" and decision.probability is None
    assert decision.kept == (
        KeptSentence(text="Leave is 20 weeks.", collection="people", passage_ids=("p_1",)),
    )
    assert decision.dropped == answer.passed_over
    closest = answer.model_copy(update={"sections": (), "closest": answer.sections[0].sentences})
    assert decided(closest).decision == AnswerDecision(outcome="closest", dropped=answer.passed_over)
    assert decided(Answer(mode="extractive", kind="factual")).decision == AnswerDecision(outcome="nothing")
    judged = answer.model_copy(
        update={"judgement": Judgement(outcome="closest", probability=0.3125, answers_at=0.5, related_at=0.2)}
    )
    assert (decided(judged).decision.outcome, decided(judged).decision.probability) == ("closest", 0.3125)  # type: ignore[union-attr]
    own = AnswerDecision(outcome="closest", probability=0.41)  # the answer step's own stands
    assert decided(answer.model_copy(update={"decision": own})).decision == own
