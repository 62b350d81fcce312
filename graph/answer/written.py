"""The answer a language model writes from the verified claims, streamed: every sentence checked
again against the passages it cites as soon as it is complete (``graph.answer.streaming``)."""

import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from graph.answer.evidence import merge_passages, other_language, outcomes_of
from graph.answer.streaming import JsonStringField, SentenceVerifier, StreamedSentence, complete_sentences
from graph.answer.synthesis import choose_claims
from graph.context import ResearchLimits
from graph.llm.port import ChatModel, LLMError
from graph.llm.prompts import SYNTHESIS_PROMPT, quote_untrusted
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, Finding, Plan
from graph.verify.citations import best_quote

logger = logging.getLogger(__name__)


async def synthesize_with_llm(
    llm: ChatModel,
    question: str,
    plan: Plan,
    findings: Sequence[Finding],
    limits: ResearchLimits,
    *,
    time_budget: float,
    on_sentence: Callable[[AnswerSentence], None] | None = None,
) -> tuple[Answer | None, int]:
    """The model writes the answer from the verified claims only, streamed; every sentence it
    writes is checked again, as soon as it is complete, against the passages its ``[n]`` point to:
    by the guards, and by the judge for what they cannot settle (``graph.answer.streaming``). A sentence
    either cannot confirm is dropped; each one that passes goes to ``on_sentence`` at once, in
    order, numbered as in the final answer. If the stream breaks off (time-out, the question's
    model deadline), the sentences verified so far are the answer. Returns ``None`` (use the
    extractive answer) when nothing survives."""
    selection = choose_claims(plan, findings, limits)
    selected = selection.claims
    if other_language(question, findings):
        # Word overlap cannot rank or gate passages in another language than the question: the
        # model writes from the best claims and the judge's verbatim quotes decide what stays.
        selected = selection.candidates
    if not selected:
        return None, 0
    retrieved = {p.id: p for f in findings for p in f.passages}
    numbers: dict[str, int] = {}
    lines = []
    for claim, collection in selected:
        markers = []
        for pid in claim.passage_ids:
            if pid in retrieved:
                numbers.setdefault(pid, len(numbers) + 1)
                markers.append(f"[{numbers[pid]}]")
        lines.append(
            f'<claim collection="{collection}">{quote_untrusted(claim.text)}</claim> {"".join(markers)}'
        )
    sources = {n: retrieved[pid] for pid, n in numbers.items()}
    renumbered: dict[str, int] = {}
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []

    def release(item: StreamedSentence) -> None:
        cited = [sources[n] for n in item.numbers]
        for passage in cited:
            if passage.id not in renumbered:
                renumbered[passage.id] = len(citations) + 1
                quote = item.verdict.quote if item.verdict and item.verdict.quote else None
                if quote is None or quote not in " ".join(passage.text.split()):
                    quote = best_quote(item.text, passage)
                citations.append(Citation(n=renumbered[passage.id], passage=passage, quote=quote))
        sentence = AnswerSentence(
            text=item.text, citations=tuple(dict.fromkeys(renumbered[p.id] for p in cited))
        )
        sentences.append(sentence)
        if on_sentence is not None:
            on_sentence(sentence)

    verifier = SentenceVerifier(llm, sources, time.monotonic() + time_budget, release)
    written = JsonStringField()
    done = 0
    stream = llm.stream_text(
        system=SYNTHESIS_PROMPT,
        user=f"Question: {quote_untrusted(question)}\n\n" + "\n".join(lines),
        time_budget=time_budget,
    )
    try:
        try:
            async with contextlib.aclosing(stream):
                async for piece in stream:
                    ready, done = complete_sentences(written.feed(piece), done, final=written.closed)
                    for text, cites in ready:
                        verifier.add(text, cites)
        except LLMError as exc:
            if not verifier.sentences:
                raise
            logger.info("the answer broke off (%s); keeping what was verified", exc.reason)
        else:
            if not written.found:
                raise LLMError(reason="invalid_output")
            ready, done = complete_sentences(written.value, done, final=True)
            for text, cites in ready:
                verifier.add(text, cites)
        await verifier.finish()
    finally:
        verifier.cancel()
    reasons_dropped = [s.dropped for s in verifier.sentences if s.dropped is not None]
    dropped = len(reasons_dropped)
    if dropped:
        logger.info("dropped %d unsupported model sentences", dropped)
    if not sentences:
        return None, dropped
    answer = Answer(
        mode="llm",
        kind=plan.kind,
        sections=(AnswerSection(collection="", sentences=tuple(sentences)),),
        citations=tuple(citations),
        outcomes=outcomes_of(plan, findings),
        retrieved=merge_passages(findings),
        dropped=dropped + sum(f.dropped for f in findings),
        drop_reasons=(*reasons_dropped, *(r for f in findings for r in f.drop_reasons)),
    )
    return answer, dropped
