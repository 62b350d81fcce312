"""Block Kit for the status message and the answer, within Slack's limits."""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.messages import STATUS_LABELS, failure_reason, following_up, partial_note
from bot.render import cite, collection_title, failed_collections, no_answer_text
from bot.slack.mrkdwn import neutralize, safe_link
from graph.models import Answer, FindingStatus
from retrieval.collections import CollectionsConfig

MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3000
MAX_CONTEXT_ELEMENTS = 10
MAX_TOTAL_CHARS = 11_000  # msg_blocks_too_long has been seen near 13,000
MAX_FALLBACK_CHARS = 3_900
FEEDBACK_ACTIONS = ("feedback_up", "feedback_down")

_ICONS: dict[FindingStatus, str] = {"ok": "✅", "empty": "➖", "failed": "⚠️", "timeout": "⏱️"}


@dataclass
class Row:
    status: FindingStatus | None = None
    sources: int = 0
    seconds: float = 0.0
    reason: str = ""


@dataclass
class StatusState:
    """Everything the status message shows; each edit renders all of it."""

    phase: str = "starting"  # starting | queued | researching | done | failed | interrupted
    queue_position: int = 0
    rows: dict[str, Row] = field(default_factory=dict)
    follow_ups: dict[tuple[str, str], Row] = field(default_factory=dict)  # (entity, collection)
    summary: str = ""


def status_text(state: StatusState, config: CollectionsConfig) -> str:
    if state.phase in ("done", "failed", "interrupted"):
        return state.summary
    if state.phase == "queued":
        ahead = state.queue_position
        return f"⏳ Queued: {ahead} question{'s' if ahead != 1 else ''} ahead of yours."
    if not state.rows:
        return "🔎 Reading your question…"
    lines = [f"🔎 Researching {len(state.rows)} collection{'s' if len(state.rows) != 1 else ''}:"]
    for name, row in state.rows.items():
        lines.append(_row_line(neutralize(collection_title(config, name)), row))
    for (entity, name), row in state.follow_ups.items():
        # The entity comes from document text: neutralized like everything else written to Slack.
        label = following_up(neutralize(entity), neutralize(collection_title(config, name)))
        lines.append(_row_line(label, row))
    return "\n".join(lines)


def _row_line(title: str, row: Row) -> str:
    if row.status is None:
        return f"• {title}: searching…"
    label = STATUS_LABELS[row.status]
    if row.status == "ok":
        label += f", {row.sources} source{'s' if row.sources != 1 else ''}"
    elif row.status == "failed":
        label += f" ({failure_reason(row.reason)})"
    return f"{_ICONS[row.status]} {title}: {label} ({row.seconds:.1f} s)"


def summary_line(answer: Answer, seconds: float) -> str:
    searched = len(answer.outcomes)
    failed = sum(1 for o in answer.outcomes if o.status in ("failed", "timeout"))
    line = (
        f"✅ Done in {seconds:.1f} s · {searched} collection{'s' if searched != 1 else ''} · "
        f"{len(answer.citations)} source{'s' if len(answer.citations) != 1 else ''}"
    )
    return line + (f" · {failed} unavailable" if failed else "")


def _split(text: str, limit: int) -> list[str]:
    """Split at sentence or line boundaries so no piece exceeds ``limit`` characters."""
    pieces: list[str] = []
    current = ""
    for part in text.replace("\n", "\n ").split(" "):
        candidate = f"{current} {part}" if current else part
        if len(candidate) > limit and current:
            pieces.append(current.strip())
            current = part
        else:
            current = candidate
        while len(current) > limit:
            pieces.append(current[:limit])
            current = current[limit:]
    if current.strip():
        pieces.append(current.strip())
    return pieces


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def answer_id(answer: Answer) -> str:
    """A short id for feedback: derived from the cited passages, never from people's text."""
    digest = hashlib.sha256("|".join(c.passage.id for c in answer.citations).encode()).hexdigest()
    return digest[:16]


def answer_message(answer: Answer, config: CollectionsConfig) -> tuple[list[dict[str, Any]], str]:
    """Blocks and plain fallback text of an answer; every document-derived string neutralized."""
    blocks: list[dict[str, Any]] = []
    fallback_parts: list[str] = []
    if not answer.found:
        text = neutralize(no_answer_text(answer, config))
        blocks.append(_section(text))
        fallback_parts.append(text)
    for section in answer.sections:
        title = neutralize(collection_title(config, section.collection))
        body = " ".join(neutralize(cite(sentence)) for sentence in section.sentences)
        for piece in _split(f"*{title}*\n{body}" if title else body, MAX_SECTION_CHARS):
            blocks.append(_section(piece))
        fallback_parts.append(f"{title}: {body}" if title else body)
    failed = failed_collections(answer, config)
    if failed:
        note = neutralize(partial_note(failed))
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"⚠️ {note}"}]})
        fallback_parts.append(note)
    source_elements = []
    for citation in answer.citations:
        passage = citation.passage
        label = (
            safe_link(passage.url, passage.title)
            if passage.url
            else neutralize(f"{passage.title} ({passage.source})")
        )
        collection = neutralize(collection_title(config, passage.collection))
        source_elements.append({"type": "mrkdwn", "text": f"*[{citation.n}]* {label} · {collection}"})
    reserved = 2  # feedback actions, and a possible "more sources" note
    room = MAX_BLOCKS - len(blocks) - reserved
    chunks = [
        source_elements[i : i + MAX_CONTEXT_ELEMENTS]
        for i in range(0, len(source_elements), MAX_CONTEXT_ELEMENTS)
    ]
    if chunks:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "*Sources*"}]})
        room -= 1
    for chunk in chunks[: max(room, 0)]:
        blocks.append({"type": "context", "elements": chunk})
    if answer.found:
        blocks.append(
            {
                "type": "actions",
                "block_id": f"feedback:{answer_id(answer)}",
                "elements": [
                    {
                        "type": "button",
                        "action_id": FEEDBACK_ACTIONS[0],
                        "value": "up",
                        "text": {"type": "plain_text", "text": "👍 Helpful"},
                    },
                    {
                        "type": "button",
                        "action_id": FEEDBACK_ACTIONS[1],
                        "value": "down",
                        "text": {"type": "plain_text", "text": "👎 Not helpful"},
                    },
                ],
            }
        )
    blocks = _fit(blocks)
    fallback = "\n\n".join(fallback_parts)
    if len(fallback) > MAX_FALLBACK_CHARS:
        fallback = fallback[: MAX_FALLBACK_CHARS - 1] + "…"
    return blocks, fallback


def _size(blocks: Sequence[dict[str, Any]]) -> int:
    total = 0
    for block in blocks:
        if "text" in block:
            total += len(block["text"]["text"])
        for element in block.get("elements", []):
            total += len(element.get("text", "")) if isinstance(element.get("text"), str) else 0
    return total


def _fit(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop trailing source lines, then trailing answer sections, until within the size limits."""
    blocks = blocks[:MAX_BLOCKS]
    while _size(blocks) > MAX_TOTAL_CHARS:
        sources = [i for i, b in enumerate(blocks) if b["type"] == "context" and len(b["elements"]) > 1]
        if sources:
            last = blocks[sources[-1]]
            last["elements"] = last["elements"][:-1]
            continue
        sections = [i for i, b in enumerate(blocks) if b["type"] == "section"]
        if len(sections) <= 1:
            break
        del blocks[sections[-1]]
    return blocks
