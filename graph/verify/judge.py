"""The judge: a model call on each sentence (or the few completed meanwhile) as the answer streams,
for what the guards cannot see (paraphrase,
translation, roles changed together with the wording around them). For each sentence it returns
a verdict and the span of a cited passage that supports it, as character offsets (it copies no
text, so it answers in a few tokens); Confer reads the span from the passage, checks it as a quote
(at least three words) and never takes the verdict alone. Sentences that are whole sentences of
their passages are never sent to it: there is nothing for it to check.

``admit`` combines both: without a judge (none configured, or it failed or timed out) the guards
decide alone and drop whatever they cannot confirm; with a judge, a sentence needs the judge's
yes with a verbatim quote *and* the guards. A sentence in another language than its passages
cannot pass the lexical overlap guard; it is admitted on the verbatim quote plus the guards that
do not depend on language (numbers, names), checked against the quote.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from graph.llm.port import ChatModel, LLMError
from graph.llm.prompts import JUDGE_PROMPT, quote_untrusted
from graph.llm.schemas import JudgeOutput
from graph.verify.guards import Reason, names_ok, numbers_ok
from retrieval.passages import Passage
from retrieval.text import STOPWORDS, words

logger = logging.getLogger(__name__)

MIN_QUOTE_WORDS = 3


@dataclass(frozen=True)
class Verdict:
    supported: bool
    quote: str | None  # the verified span (a verbatim part of a cited passage), else None


def _normal(text: str) -> str:
    return " ".join(text.split())


def verified_quote(quote: str, passages: Sequence[Passage]) -> str | None:
    """``quote`` if it is, up to whitespace, a verbatim part of one of ``passages`` (as shown to
    the judge) and long enough to state something; else ``None``."""
    wanted = _normal(quote).strip(" .")
    if len(wanted.split()) < MIN_QUOTE_WORDS:
        return None
    for passage in passages:
        if wanted in _normal(quote_untrusted(passage.text)) or wanted in _normal(passage.text):
            return wanted
    return None


def judge_message(items: Sequence[tuple[str, Sequence[int]]], sources: dict[int, Passage]) -> str:
    used = sorted({n for _, numbers in items for n in numbers if n in sources})
    parts = [
        f'<passage n="{n}" title="{quote_untrusted(sources[n].title)}">\n'
        f"{quote_untrusted(sources[n].text)}\n</passage>"
        for n in used
    ]
    for i, (text, numbers) in enumerate(items, 1):
        cites = ",".join(str(n) for n in numbers)
        parts.append(f'<sentence i="{i}" cites="{cites}">{quote_untrusted(text)}</sentence>')
    return "\n".join(parts)


async def judge(
    llm: ChatModel,
    items: Sequence[tuple[str, Sequence[int]]],
    sources: dict[int, Passage],
    *,
    time_budget: float,
) -> list[Verdict] | None:
    """One verdict per item (sentence, cited numbers), or ``None`` if the judge failed: then the
    guards decide alone. A verdict without a verbatim quote from a passage the sentence cites is
    a no."""
    if not items or time_budget <= 0:
        return None
    try:
        output = await llm.complete_json(
            system=JUDGE_PROMPT,
            user=judge_message(items, sources),
            schema=JudgeOutput,
            time_budget=time_budget,
        )
    except LLMError as exc:
        logger.info("judge failed (%s): guards only", exc.reason)
        return None
    by_index = {v.i: v for v in output.verdicts}
    verdicts = []
    for i, (_, numbers) in enumerate(items, 1):
        verdict = by_index.get(i)
        if verdict is None or not verdict.supported or verdict.passage not in numbers:
            verdicts.append(Verdict(False, None))
            continue
        quote = span_quote(sources.get(verdict.passage), verdict.start, verdict.end)
        verdicts.append(Verdict(quote is not None, quote))
    return verdicts


def span_quote(passage: Passage | None, start: int, end: int) -> str | None:
    """The judge's span of ``passage`` (character offsets in its text as shown, which has the
    same length as the stored text), checked as quotes always were: inside the passage and long
    enough to state something; else ``None``."""
    if passage is None or not 0 <= start < end <= len(passage.text):
        return None
    return verified_quote(passage.text[start:end], [passage])


def looks_english(text: str) -> bool:
    """A rough, deterministic language test: English prose is full of its function words."""
    tokens = words(text)
    return bool(tokens) and sum(t in STOPWORDS for t in tokens) / len(tokens) >= 0.2


def judgeable(sentence: str, reason: Reason | None) -> bool:
    """Whether the judge can still admit a sentence the guards gave ``reason`` for: one they
    passed, or one in another language that only the lexical overlap guard could not confirm.
    Nothing the guards rejected is sent to the judge (or shown to the model again)."""
    return reason is None or (reason == "unsupported" and not looks_english(sentence))


def admit(
    sentence: str, cited: Sequence[Passage], reason: Reason | None, verdict: Verdict | None
) -> Reason | None:
    """Why the sentence must be dropped, or ``None`` to keep it. ``reason`` is what the guards
    said (``check``); ``verdict`` is ``None`` when no judge ran (none configured, or it failed):
    then the guards decide alone and fail closed."""
    if verdict is None or not judgeable(sentence, reason):
        return reason
    if not verdict.supported or verdict.quote is None:
        return "judge"
    if reason is None:
        return None
    texts = [p.text for p in cited]  # another language: the quote plus language-free guards
    if not numbers_ok(sentence, texts, [verdict.quote]):
        return "number"
    if not names_ok(sentence, texts, [verdict.quote], foreign=True):
        return "name"
    return None
