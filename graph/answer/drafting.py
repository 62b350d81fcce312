"""LLM drafting inside a research branch: claims that cite numbered passages, each verified."""

from collections.abc import Sequence

from graph.llm.port import ChatModel
from graph.llm.prompts import DRAFT_PROMPT, quote_untrusted
from graph.llm.schemas import DraftOutput
from graph.models import Claim
from graph.trace import note_dropped
from graph.verify.guards import Reason, check
from graph.verify.judge import span_quote
from retrieval.passages import Passage
from retrieval.text import split_sentences, stems


def passages_message(question: str, passages: Sequence[Passage]) -> str:
    parts = [f"Question: {quote_untrusted(question)}", ""]
    for number, passage in enumerate(passages, 1):
        parts.append(
            f'<passage n="{number}" title="{quote_untrusted(passage.title)}">\n'
            f"{quote_untrusted(passage.text)}\n</passage>"
        )
    return "\n".join(parts)


def coverage(question: str, text: str, passages: Sequence[Passage]) -> float:
    """Share of the question's content stems the claim (or its passages' titles) covers."""
    wanted = stems(question)
    if not wanted:
        return 0.0
    have = stems(text) | {s for p in passages for s in stems(p.title)}
    return round(len(wanted & have) / len(wanted), 4)


def _quoted_claim(
    question: str, passages: Sequence[Passage], number: int, start: int, end: int
) -> Claim | None:
    """The whole sentences of passage ``number`` that the span ``start``–``end`` touches, as a
    claim quoting them; ``None`` when the span is not inside the passage or too short to state
    anything (checked as the judge's spans are)."""
    if not 1 <= number <= len(passages):
        return None
    passage = passages[number - 1]
    if span_quote(passage, start, end) is None:
        return None
    touched, at = [], 0
    for sentence in split_sentences(passage.text):
        begins = passage.text.find(sentence, at)
        if begins < 0:
            continue
        at = begins + len(sentence)
        if begins < end and start < at:
            touched.append(sentence)
    if not touched:
        return None
    text = " ".join(touched)
    return Claim(text=text, passage_ids=(passage.id,), coverage=coverage(question, text, [passage]))


async def draft_with_llm(
    llm: ChatModel, question: str, passages: Sequence[Passage], *, limit: int, time_budget: float
) -> tuple[list[Claim], tuple[Reason, ...]]:
    """Claims from the model: the passage spans it points at, quoted as the whole sentences they
    touch (it copies no text, so a draft takes a few tokens), or sentences it wrote that cite
    existing passages and pass every guard against them; returns the claims and, for each claim
    that failed verification, why."""
    output = await llm.complete_json(
        system=DRAFT_PROMPT.replace("{max_claims}", str(limit)),
        user=passages_message(question, passages),
        schema=DraftOutput,
        time_budget=time_budget,
    )
    claims: list[Claim] = []
    dropped: list[Reason] = []

    def drop(reason: Reason, text: str, checked: Sequence[Passage]) -> None:
        dropped.append(reason)
        note_dropped(text, reason, (p.collection for p in checked or passages))  # for the trace

    for draft in output.claims:
        if draft.passage:  # a span: quoted whole, the sentences it touches, no guard to pass
            quoted = _quoted_claim(question, passages, draft.passage, draft.start, draft.end)
            if quoted is None:
                drop("unsupported", "", ())
            else:
                claims.append(quoted)
            continue
        text = " ".join(draft.text.split())
        numbers = list(dict.fromkeys(draft.passages))
        if not text or not numbers or any(not 1 <= n <= len(passages) for n in numbers):
            drop("unsupported", text, ())
            continue
        cited = [passages[n - 1] for n in numbers]
        reason = check(text, (p.text for p in cited))
        if reason is not None:
            drop(reason, text, cited)
            continue
        claims.append(
            Claim(text=text, passage_ids=tuple(p.id for p in cited), coverage=coverage(question, text, cited))
        )
    return claims[:limit], tuple(dropped)
