from typing import cast

from bot.evaluation.datasets import EvalQuestion
from bot.evaluation.scoring import (
    QuestionResult,
    f1,
    followup_report,
    gold_recall,
    is_gold_source,
    normalize_answer,
    not_found_report,
    summarize,
    token_recall,
)
from bot.evaluation.suites import EvidenceHidingBackend
from retrieval.backends import SearchBackend
from retrieval.collections import Collection
from retrieval.passages import Passage


def test_answer_normalization_follows_hotpotqa() -> None:
    assert normalize_answer("The  Beatles!") == "beatles"
    assert f1("the Terry Richardson", "Terry Richardson") == 1.0
    assert 0 < f1("Terry", "Terry Richardson") < 1
    assert f1("nothing", "Terry Richardson") == 0.0


def _question(**fields: object) -> EvalQuestion:
    base: dict[str, object] = {
        "id": "q",
        "question": "how much time off do new parents get",
        "type": "answerable",
        "answers": ("20 weeks",),
        "gold_ids": (),
        "gold_collections": ("people",),
        "gold_sources": ("samples/people/parental-leave.pdf",),
        "reference": "Every parent receives 20 weeks of fully paid parental leave.",
    }
    base.update(fields)
    return EvalQuestion(**base)  # type: ignore[arg-type]


LEAVE = "/srv/confer/samples/people/parental-leave.pdf"
VULN = "/srv/confer/samples/security/vulnerability-management.md"


def _result(question: EvalQuestion, **fields: object) -> QuestionResult:
    base: dict[str, object] = {
        "question": question,
        "ranked": ["a", "b", "c"],
        "baseline_ranked": [],
        "chosen": ["people", "security"],
        "cited": ["a", "b"],
        "citation_valid": True,
        "sentences": 2,
        "supported": 2,
        "answer_text": "People policies: Every parent receives 20 weeks of paid leave.",
        "answer_sentences": "Every parent receives 20 weeks of paid leave.",
        "mode": "extractive",
        "seconds": 0.1,
        "ranked_sources": [VULN, LEAVE, LEAVE],
        "cited_sources": [LEAVE, VULN],
        "sections": ["people", "security"],
    }
    base.update(fields)
    return QuestionResult(**base)  # type: ignore[arg-type]


def test_gold_documents_match_source_names_by_their_ending() -> None:
    assert is_gold_source(LEAVE, "samples/people/parental-leave.pdf")
    assert is_gold_source("samples/people/parental-leave.pdf", "samples/people/parental-leave.pdf")
    assert not is_gold_source(
        "/srv/confer/othersamples/people/parental-leave.pdf", "samples/people/parental-leave.pdf"
    )
    question = _question()
    assert gold_recall(["a"], [VULN], question, 1) == 0.0
    assert gold_recall(["a", "b"], [VULN, LEAVE], question, 2) == 1.0
    # Passage ids decide when the question names gold passages.
    by_id = _question(gold_ids=("b",), gold_sources=())
    assert gold_recall(["a", "b"], [VULN, LEAVE], by_id, 1) == 0.0
    assert gold_recall(["a", "b"], [VULN, LEAVE], by_id, 2) == 1.0


def test_token_recall_counts_the_reference_answers_content_words() -> None:
    reference = "Every parent receives 20 weeks of fully paid parental leave."
    # Its content words, stemmed: every, parent (also "parental"), receive, 20, week, fully, paid, leave.
    assert (
        token_recall("Every parent receives 20 weeks of paid parental leave, fully paid.", reference) == 1.0
    )
    assert token_recall("20 weeks of leave, paid", reference) == 0.5
    assert token_recall("", reference) == 0.0
    assert token_recall("anything", "") is None


def test_answers_are_scored_on_their_documents_sections_and_not_found() -> None:
    answered = _result(_question())
    unanswerable = _result(
        _question(
            id="u", type="unanswerable", answers=("",), gold_sources=(), gold_collections=(), reference=""
        ),
        found=False,
        answer_text="",
        answer_sentences="",
    )
    wrongly = _result(_question(id="w"), found=False, answer_text="", answer_sentences="", sections=[])
    metrics = summarize([answered, unanswerable, wrongly], baseline=False, with_model=False)
    assert metrics["recall_at_2"] == 1.0 and metrics["routing_recall"] == 1.0  # answerable ones only
    assert metrics["answer_contains"] == 0.5  # questions without a short answer do not count
    assert metrics["token_recall"] == (7 / 8 + 0.0) / 2  # "fully" missing; "not found" scores 0
    assert metrics["answers_citing_gold"] == 1.0
    assert metrics["cited_from_gold"] == 0.5  # one of the two passages cited is from the gold document
    assert metrics["unrelated_sections"] == 1.0  # a security section in a parental leave answer
    assert metrics["said_not_found_unanswerable"] == 1.0
    assert metrics["wrongly_not_found_answerable"] == 0.5
    only_people = _result(_question(), sections=["people"], cited_sources=[LEAVE, LEAVE])
    metrics = summarize([only_people], baseline=False, with_model=False)
    assert metrics["unrelated_sections"] == 0.0 and metrics["cited_from_gold"] == 1.0
    baseline = summarize([answered, unanswerable], baseline=True, with_model=False)
    assert baseline["unrelated_sections"] is None and baseline["said_not_found_unanswerable"] is None


def test_the_not_found_report_separates_unanswerable_from_answerable_questions() -> None:
    answered = _result(_question())
    unanswerable = _result(
        _question(id="u", type="unanswerable", gold_sources=(), gold_collections=()), found=False
    )
    report = not_found_report([answered, unanswerable], [True, None])
    assert report["answerable"] == 1 and report["unanswerable"] == 1
    assert report["not_found_without_evidence"] == 1.0
    assert report["not_found_when_answerable"] == 0.0  # the unanswerable question is not counted
    assert report["unanswerable_said_not_found"] == 1.0
    assert report["by_type"]["unanswerable"]["not_found_without_evidence"] is None


def test_followups_compare_the_question_as_asked_with_the_standalone_rewrite() -> None:
    rewritten = _question(
        type="followup_rewritten",
        question="How many weeks of parental leave can I take?",
        asked="how many weeks can I take?",
        history=(("user", "we are expecting a baby"),),
    )
    assert rewritten.as_asked == "how many weeks can I take?" and rewritten.user_turns == [
        "we are expecting a baby"
    ]
    result = _result(rewritten, standalone_ranked=["x", "a"], standalone_sources=[LEAVE, VULN])
    report = followup_report([result, _result(_question())])
    assert report is not None and report["overall"]["questions"] == 1
    assert report["overall"]["as_asked_recall_at_2"] == 1.0  # ranked_sources: [VULN, LEAVE, ...]
    assert report["overall"]["standalone_recall_at_2"] == 1.0
    assert followup_report([_result(_question())]) is None


async def test_the_evidence_hiding_backend_hides_gold_documents_by_source() -> None:
    passages = [
        Passage(id=f"p{i}", collection="people", doc_id=s, source=s, title=s, text="leave", score=1.0)
        for i, s in enumerate([LEAVE, LEAVE, VULN, "/srv/confer/samples/people/time-off.md"])
    ]

    class Inner:
        async def search(
            self, collection: Collection, query: str, *, limit: int, **_: object
        ) -> list[Passage]:
            return passages[:limit]

    hiding = EvidenceHidingBackend(cast(SearchBackend, Inner()))
    hiding.hidden_sources = frozenset({"samples/people/parental-leave.pdf"})
    hits = await hiding.search(Collection(name="people", title="People", sources=("x",)), "leave", limit=2)
    assert [p.id for p in hits] == ["p2", "p3"]
