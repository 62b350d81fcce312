"""Drafts as passage spans: the model points at the words (character offsets), Confer quotes the
whole sentences they touch; a span outside the passage, or too short to state anything, is dropped."""

import json
from collections.abc import AsyncGenerator
from typing import Any

from graph.answer.drafting import draft_with_llm
from graph.llm.port import SchemaT
from retrieval.passages import Passage

TEXT = "Parental leave is 18 weeks at full pay. Leave can start up to four weeks before the birth."
PASSAGE = Passage(
    id="p1", collection="people", doc_id="d", source="leave.md", title="Leave", text=TEXT, score=1.0
)


class OneReply:
    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        return schema.model_validate_json(json.dumps(self.reply))

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        yield json.dumps(self.reply)

    async def close(self) -> None:
        pass


def _span(words: str) -> dict[str, int]:
    start = TEXT.find(words)
    return {"passage": 1, "start": start, "end": start + len(words)}


async def _claims(*claims: dict[str, Any]) -> tuple[list[str], tuple[str, ...]]:
    drafted, dropped = await draft_with_llm(
        OneReply({"claims": list(claims)}), "How long is leave?", [PASSAGE], limit=3, time_budget=5
    )
    return [c.text for c in drafted], dropped


async def test_a_span_becomes_the_whole_sentences_it_touches() -> None:
    assert await _claims(_span("18 weeks at full pay")) == (["Parental leave is 18 weeks at full pay."], ())
    both = _span("full pay. Leave can start")
    assert await _claims(both) == ([TEXT], ())


async def test_a_span_outside_its_passage_or_too_short_is_dropped() -> None:
    outside = {"passage": 1, "start": 10, "end": len(TEXT) + 3}
    unknown = {**_span("18 weeks at full pay"), "passage": 2}
    assert await _claims(outside, unknown, _span("18 weeks")) == ([], ("unsupported",) * 3)
