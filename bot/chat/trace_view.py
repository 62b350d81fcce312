"""An answer's trace ("How I found this") as lines of plain text, the same on every platform.

Each platform escapes the lines into its own markup (Slack mrkdwn, Teams text, the terminal's
printable text) and indents them by their ``depth``. The lines show only what the place they are
shown in may search: ``shown_in`` keeps a trace within the place's collections before it is read.
"""

from dataclasses import dataclass
from typing import cast

from bot import messages
from bot.chat import trace_messages
from graph import AnswerTrace, FindingStatus
from retrieval.collections import CollectionsConfig


@dataclass(frozen=True)
class TraceLine:
    text: str
    depth: int = 0  # 0: a heading, 1: an item under it, 2: a detail of that item


def _title(config: CollectionsConfig, name: str) -> str:
    collection = config.get(name)
    return collection.title if collection else name


def shown_in(trace: AnswerTrace, allowed: tuple[str, ...]) -> AnswerTrace:
    """The trace as a place that may search ``allowed`` may see it (the place the answer was asked
    in could search more, or its policy may have changed since)."""
    return trace.within(allowed)


def trace_lines(trace: AnswerTrace, config: CollectionsConfig) -> list[TraceLine]:
    """The trace, readable: question, plan, each round's branches with their top hits and the
    follow-ups they led to, the answer's decision with the sentences kept and dropped, and each
    model call."""
    lines = [
        TraceLine(trace_messages.TRACE_TITLE),
        TraceLine(trace_messages.trace_question(trace.question, trace.asked), 1),
    ]
    chosen = [f"{_title(config, c.name)} ({_choice(c.why, c.score)})" for c in trace.plan.collections]
    lines.append(TraceLine(trace_messages.trace_plan(trace.plan.kind, chosen), 1))
    searched = {c.name for c in trace.plan.collections}
    others = [
        f"{_title(config, n)} (routing score {s:.3f})" for n, s in trace.plan.scores if n not in searched
    ]
    if others:
        lines.append(TraceLine(trace_messages.trace_not_chosen(others), 1))
    titles = {h.passage_id: h.title for r in trace.rounds for b in r.branches for h in b.hits}
    for round_ in trace.rounds:
        lines.append(TraceLine(trace_messages.trace_round(round_.number, round_.seconds)))
        for branch in round_.branches:
            status = cast(FindingStatus, branch.status)
            outcome = messages.task_output(status, branch.found, branch.reason)
            lines.append(
                TraceLine(
                    trace_messages.trace_branch(
                        _title(config, branch.collection),
                        branch.queries,
                        outcome,
                        branch.seconds,
                        branch.entity,
                    ),
                    1,
                )
            )
            lines += [
                TraceLine(
                    trace_messages.trace_hit(
                        rank,
                        hit.title,
                        hit.passage_id,
                        trace_messages.trace_scores(hit.word, hit.meaning, hit.fused),
                    ),
                    2,
                )
                for rank, hit in enumerate(branch.hits, start=1)
            ]
        lines += [
            TraceLine(
                trace_messages.trace_lead(
                    lead.entity, _title(config, lead.collection), lead.source, titles.get(lead.origin, "")
                ),
                1,
            )
            for lead in round_.leads
        ]
    if trace.decision is not None:
        decision = trace.decision
        lines.append(TraceLine(trace_messages.trace_decision(decision.outcome, decision.probability)))
        lines += [
            TraceLine(trace_messages.trace_kept(k.text, _title(config, k.collection)), 1)
            for k in decision.kept
        ]
        lines += [TraceLine(trace_messages.trace_dropped(d.text, d.reason), 1) for d in decision.dropped]
    if trace.model_calls:
        lines.append(TraceLine(trace_messages.TRACE_MODEL_CALLS))
        lines += [
            TraceLine(
                trace_messages.trace_model_call(
                    c.purpose, c.model, c.seconds, (c.prompt_tokens, c.completion_tokens), c.outcome
                ),
                1,
            )
            for c in trace.model_calls
        ]
    else:
        lines.append(TraceLine(trace_messages.TRACE_NO_MODEL))
    lines.append(TraceLine(trace_messages.trace_footer(trace.seconds, trace.trace_id)))
    return lines


def _choice(why: str, score: float | None) -> str:
    words = trace_messages.TRACE_CHOICES.get(why, why)
    return words.format(score=f"{score:.3f}" if score is not None else "n/a")


def plain_trace(lines: list[TraceLine]) -> str:
    """The lines as indented plain text (the terminal)."""
    return "\n".join("  " * line.depth + line.text for line in lines)
