"""The judge in synthesis: one batched call, quotes checked verbatim, guards still in charge, and
a failing judge leaves the guards deciding alone (fail closed)."""

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from graph.context import ResearchLimits
from graph.judge import looks_english, verified_quote
from graph.llm import LLMError, SchemaT
from graph.models import Claim, Finding, Plan, ResearchTask
from graph.synthesis import synthesize_with_llm
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

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncIterator[str]:
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
    return {"i": i, "supported": supported, "passage": 1, "quote": quote}


async def _answer(model: ScriptedModel, question: str = "How long is parental leave?") -> list[str]:
    answer, _ = await synthesize_with_llm(model, question, PLAN, FINDINGS, ResearchLimits(), time_budget=10)
    return [s.text for sec in answer.sections for s in sec.sentences] if answer else []


TRUE = "Parental leave is 18 weeks at full pay for every parent."
SPANISH = "El permiso parental es de 18 semanas con el sueldo completo para cada padre."
GERMAN = "Die Elternzeit dauert 18 Wochen bei vollem Gehalt für jeden Elternteil."


async def test_one_judge_call_and_a_verbatim_quote_admit_a_sentence() -> None:
    model = ScriptedModel(_cited(TRUE), {"verdicts": [_verdict(1, TRUE)]})
    assert await _answer(model) == [TRUE]
    assert [system.split()[:2] for system, _ in model.calls] == [["You", "write"], ["You", "check"]]


@pytest.mark.parametrize(
    "verdict",
    [
        _verdict(1, TRUE, supported=False),
        _verdict(1, "Parental leave is 26 weeks at full pay"),  # not in the passage
        _verdict(1, "leave is"),  # too short to state anything
        {"i": 2, "supported": True, "passage": 1, "quote": TRUE},  # a verdict for another sentence
    ],
)
async def test_a_judge_that_says_no_or_cannot_quote_drops_the_sentence(verdict: dict[str, Any]) -> None:
    model = ScriptedModel(_cited(TRUE), {"verdicts": [verdict]})
    assert await _answer(model) == []


async def test_the_guards_still_apply_when_the_judge_says_yes() -> None:
    lie = "Parental leave is not 18 weeks at full pay for every parent."
    model = ScriptedModel(_cited(lie, TRUE), {"verdicts": [_verdict(1, TRUE), _verdict(2, TRUE)]})
    assert await _answer(model) == [TRUE]
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
