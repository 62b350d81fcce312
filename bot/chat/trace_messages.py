"""What the trace of an answer ("How I found this") says, on every platform and in the terminal:
its headings, each line's wording, and why each sentence was dropped."""

from collections.abc import Sequence

# "How I found this": the trace of an answer, shown on demand (every platform and the terminal).
TRACE_LABEL = "How I found this"
TRACE_TITLE = "How I found this answer"
TRACE_GONE = "That answer's trace is no longer kept (traces are kept for {days} days)."
TRACE_NOT_KEPT = "The trace of that answer could not be read right now, sorry."
TRACE_NOT_FOUND = "No trace is kept under that id (it may have expired)."
TRACE_ASKER_ONLY = "Only the person who asked this question can open how its answer was found."
TRACE_CHOICES = {
    "requested": "named with in:",
    "channel_default": "this channel's default",
    "routing": "routing score {score}",
    "named": "the question names it",
    "all": "no collection stood out, so every one",
    "model": "the model's plan added it",
    "elsewhere": "nothing else answered; it covers the question",
}
TRACE_OUTCOMES = {
    "found": "answered",
    "closest": "no direct answer; the closest sentences offered",
    "nothing": "nothing related found",
}
TRACE_DROP_REASONS = {
    "unsupported": "its source does not say it",
    "number": "a number its source does not give",
    "negation": "it negates what its source says (or the reverse)",
    "name": "a name its source does not give",
    "roles": "it swaps who did what to whom",
    "quantifier": "it says more or less than its source (all, some, never)",
    "comparative": "a comparison its source does not make",
    "judge": "the verifying model found no support for it",
    # why an extractive answer passed a candidate sentence over
    "duplicate": "it says what a kept sentence says (its source is cited there)",
    "floor": "it ranks far below the best sentence",
    "enough": "the answer had its sentences",
    "far_collection": "its collection's passages rank far below the best",
    "unrelated": "nothing of its collection is related to the question by meaning",
    "far_document": "its document is far in meaning from the question",
    "not_covered": "the sentences found do not answer the whole question",
    "not_answering": "the answer judge finds it unrelated to what was asked (padding)",
}


def trace_question(question: str, asked: str) -> str:
    if asked:
        return f'Question: "{question}" (asked as "{asked}")'
    return f'Question: "{question}"'


def trace_plan(kind: str, chosen: Sequence[str]) -> str:
    return f"Plan: a {kind} question; searched " + ("; ".join(chosen) if chosen else "nothing")


def trace_not_chosen(scored: Sequence[str]) -> str:
    return "Not searched: " + "; ".join(scored)


def trace_round(number: int, seconds: float) -> str:
    return (
        f"Round {number} ({seconds:.2f} s)"
        if number == 1
        else f"Round {number}, follow-ups ({seconds:.2f} s)"
    )


def trace_branch(title: str, queries: Sequence[str], outcome: str, seconds: float, entity: str) -> str:
    asked = " | ".join(f'"{q}"' for q in queries)
    about = f" for {entity}" if entity else ""
    return f"{title}{about}: {asked}: {outcome} in {seconds:.2f} s"


def trace_hit(rank: int, title: str, passage_id: str, scores: str) -> str:
    return f"{rank}. {title} ({passage_id}): {scores}"


def trace_scores(word: float | None, meaning: float | None, fused: float) -> str:
    parts = [
        f"word {word:.3f}" if word is not None else "",
        f"meaning {meaning:.3f}" if meaning is not None else "",
    ]
    return ", ".join([p for p in parts if p] + [f"fused {fused:.3f}"])


def trace_lead(entity: str, title: str, source: str, origin: str) -> str:
    why = "the model proposed it" if source == "model" else "the evidence names it but does not say more"
    named = f", named in {origin}" if origin else ""
    return f'Followed "{entity}" in {title} ({why}{named})'


def trace_decision(outcome: str, probability: float | None) -> str:
    text = f"Answer: {TRACE_OUTCOMES.get(outcome, outcome)}"
    return text if probability is None else f"{text} (probability {probability:.2f})"


def trace_kept(text: str, title: str) -> str:
    return f'Kept: "{text}"' + (f" ({title})" if title else "")


def trace_dropped(text: str, reason: str) -> str:
    why = TRACE_DROP_REASONS.get(reason, reason)
    return f'Dropped: "{text}": {why}' if text else f"Dropped a sentence: {why}"


def trace_model_call(purpose: str, model: str, seconds: float, tokens: tuple[int, int], outcome: str) -> str:
    used = f", {tokens[0]} + {tokens[1]} tokens" if any(tokens) else ""
    return f"{purpose.replace('_', ' ')} with {model}, {seconds:.2f} s{used}: {outcome}"


TRACE_MODEL_CALLS = "Model calls"
TRACE_NO_MODEL = "Model calls: none (answered from the documents' own sentences)"


def trace_footer(seconds: float, trace_id: str) -> str:
    return f"{seconds:.2f} s in all" + (f"; trace id {trace_id}" if trace_id else "")
