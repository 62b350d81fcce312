"""The judge in synthesis: asked only about what the guards cannot settle, answering with character
offsets that are read from the passage and checked as quotes, the guards still in charge, and a
failing judge leaving the guards deciding alone (fail closed)."""

import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from graph.answer.written import synthesize_with_llm
from graph.context import ResearchLimits
from graph.llm.port import LLMError, SchemaT
from graph.models import Claim, Finding, Plan, ResearchTask
from graph.verify.judge import looks_english, verified_quote
from retrieval.passages import Passage

TEXT = (
    "Parental leave is 18 weeks at full pay for every parent. Leave can start up to four weeks "
    "before the expected birth. Ana Lopez in People Operations approves leave requests."
)
PASSAGE = Passage(
    id="p1", collection="people", doc_id="p1", source="leave.md", title="Leave", text=TEXT, score=5.0
)
PLAN = Plan(
    kind="factual",
    routing="automatic",
    tasks=(ResearchTask(collection="people", queries=("q",), question="q"),),
)
FINDINGS = [
    Finding(
        collection="people",
        status="ok",
        passages=(PASSAGE,),
        claims=(
            Claim(
                text="Parental leave is 18 weeks at full pay for every parent.",
                passage_ids=("p1",),
                coverage=1.0,
            ),
        ),
        seconds=0.1,
    )
]


class ScriptedModel:
    """A model answering each call from a list: a dict (the JSON reply) or an ``LLMError``."""

    def __init__(self, *replies: dict[str, Any] | LLMError) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str]] = []

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        self.calls.append((system, user))
        reply = self.replies.pop(0)
        if isinstance(reply, LLMError):
            raise reply
        return schema.model_validate_json(json.dumps(reply))

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        self.calls.append((system, user))
        reply = self.replies.pop(0)
        if isinstance(reply, LLMError):
            raise reply
        text = json.dumps(reply)
        for start in range(0, len(text), 7):  # a few characters at a time, as a model streams
            yield text[start : start + 7]

    async def close(self) -> None:
        pass


def _cited(*sentences: str) -> dict[str, str]:
    """The model's answer: each sentence with its [1] before the full stop."""
    return {"answer": " ".join(s.rstrip(".") + " [1]." for s in sentences)}


def _verdict(i: int, quote: str, supported: bool = True) -> dict[str, Any]:
    """The judge's answer pointing at ``quote`` in the passage by its character offsets."""
    start = TEXT.find(quote)
    return {"i": i, "supported": supported, "passage": 1, "start": start, "end": start + len(quote)}


async def _answer(model: ScriptedModel, question: str = "How long is parental leave?") -> list[str]:
    answer, _ = await synthesize_with_llm(model, question, PLAN, FINDINGS, ResearchLimits(), time_budget=10)
    return [s.text for sec in answer.sections for s in sec.sentences] if answer else []


TRUE = "Parental leave is 18 weeks at full pay for every parent."
SPANISH = "El permiso parental es de 18 semanas con el sueldo completo para cada padre."
GERMAN = "Die Elternzeit dauert 18 Wochen bei vollem Gehalt für jeden Elternteil."


PARAPHRASE = "Every parent gets 18 weeks of parental leave at full pay."


async def test_a_whole_sentence_of_its_passage_is_admitted_without_asking_the_judge() -> None:
    model = ScriptedModel(_cited(TRUE))
    assert await _answer(model) == [TRUE]
    assert [system.split()[:2] for system, _ in model.calls] == [["You", "write"]]


async def test_a_paraphrase_is_admitted_on_the_judges_offsets() -> None:
    model = ScriptedModel(_cited(TRUE, PARAPHRASE), {"verdicts": [_verdict(1, TRUE)]})
    assert await _answer(model) == [TRUE, PARAPHRASE]
    assert [system.split()[:2] for system, _ in model.calls] == [["You", "write"], ["You", "check"]]
    judged = model.calls[1][1]
    assert PARAPHRASE in judged and f">{TRUE} [" not in judged  # only what the guards cannot settle
    assert 'i="1"' in judged and 'i="2"' not in judged


@pytest.mark.parametrize(
    "verdict",
    [
        _verdict(1, TRUE, supported=False),
        {"i": 1, "supported": True, "passage": 1, "start": 0, "end": len(TEXT) + 5},  # past the end
        {"i": 1, "supported": True, "passage": 1, "start": 30, "end": 30},  # an empty span
        {"i": 1, "supported": True, "passage": 1},  # no offsets at all
        _verdict(1, "leave is"),  # too short to state anything
        {**_verdict(1, TRUE), "passage": 2},  # a passage the sentence does not cite
        {**_verdict(1, TRUE), "i": 2},  # a verdict for another sentence
    ],
)
async def test_a_judge_that_says_no_or_points_at_nothing_drops_the_sentence(verdict: dict[str, Any]) -> None:
    model = ScriptedModel(_cited(PARAPHRASE), {"verdicts": [verdict]})
    assert await _answer(model) == []


async def test_the_guards_still_apply_when_the_judge_says_yes() -> None:
    lie = "Every parent gets 18 weeks of parental leave at no pay."
    model = ScriptedModel(_cited(lie, PARAPHRASE), {"verdicts": [_verdict(1, TRUE), _verdict(2, TRUE)]})
    assert await _answer(model) == [PARAPHRASE]
    assert lie not in model.calls[1][1]  # what the guards reject is not even sent to the judge


async def test_a_failing_judge_leaves_the_guards_in_charge() -> None:
    lie = "Parental leave is 18 months at full pay for every parent."
    model = ScriptedModel(_cited(lie, TRUE, SPANISH), LLMError(reason="timeout"))
    assert await _answer(model) == [TRUE]  # the Spanish sentence cannot be confirmed without a judge


@pytest.mark.parametrize(
    ("question", "sentence"),
    [("¿Cuánto dura el permiso parental?", SPANISH), ("Wie lange dauert die Elternzeit?", GERMAN)],
)
async def test_an_answer_in_the_questions_language_is_verified_through_the_quote(
    question: str, sentence: str
) -> None:
    model = ScriptedModel(_cited(sentence), {"verdicts": [_verdict(1, TRUE)]})
    assert await _answer(model, question) == [sentence]


@pytest.mark.parametrize(
    "sentence",
    [
        "El permiso parental es de 26 semanas con el sueldo completo.",  # number not in the passage
        "Die Elternzeit dauert 4 Wochen bei vollem Gehalt.",  # a value the quote does not state
        "Maria Garcia aprueba las solicitudes de permiso.",  # a name the passage never mentions
    ],
)
async def test_a_translated_sentence_still_passes_the_language_free_guards(sentence: str) -> None:
    model = ScriptedModel(_cited(sentence), {"verdicts": [_verdict(1, TRUE)]})
    assert await _answer(model, "¿Cuánto dura el permiso parental?") == []


def test_quotes_and_languages() -> None:
    assert verified_quote("Parental  leave is 18 weeks", [PASSAGE]) == "Parental leave is 18 weeks"
    assert verified_quote("parental leave is 18 weeks", [PASSAGE]) is None
    assert looks_english(TRUE) and not looks_english(SPANISH) and not looks_english(GERMAN)


async def test_a_german_sentence_with_an_invented_name_is_dropped() -> None:
    sentence = "Die Anträge genehmigt Maria Garcia in der Personalabteilung."
    model = ScriptedModel(
        _cited(sentence), {"verdicts": [_verdict(1, "Ana Lopez in People Operations approves")]}
    )
    assert await _answer(model, "Wer genehmigt die Elternzeit?") == []
