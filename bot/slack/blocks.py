"""Block Kit for the status message and the answer, within Slack's limits."""

from collections.abc import Sequence
from typing import Any

from bot import messages
from bot.messages import following_up, partial_note
from bot.progress import FINAL_PHASES, Row, StatusState
from bot.render import answer_id, cite, collection_title, failed_collections, no_answer_text, source_labels
from bot.slack.mrkdwn import neutralize, safe_link
from graph.models import Answer
from retrieval.collections import CollectionsConfig

MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3000
MAX_CONTEXT_ELEMENTS = 10
MAX_TOTAL_CHARS = 11_000  # msg_blocks_too_long has been seen near 13,000
MAX_FALLBACK_CHARS = 3_900
FEEDBACK_ACTIONS = ("feedback_up", "feedback_down")


def status_text(state: StatusState, config: CollectionsConfig) -> str:
    """The status message: every word from ``bot.messages``, collection titles neutralized."""
    if state.phase in FINAL_PHASES:
        return state.summary
    if state.phase == "queued":
        return messages.status_queued(state.queue_position)
    if not state.rows:
        return messages.STATUS_READING
    lines = [messages.status_researching(len(state.rows))]
    if state.searching:  # rewritten from what a person wrote: neutralized like everything else
        lines.insert(0, messages.searching_for(neutralize(state.searching)))
    for name, row in state.rows.items():
        lines.append(_row_line(neutralize(collection_title(config, name)), row))
    for (entity, name), row in state.follow_ups.items():
        # The entity comes from document text: neutralized like everything else written to Slack.
        label = following_up(neutralize(entity), neutralize(collection_title(config, name)))
        lines.append(_row_line(label, row))
    return "\n".join(lines)


def _row_line(title: str, row: Row) -> str:
    if row.status is None:
        return f"• {title}: {messages.STATUS_SEARCHING}"
    label = messages.status_row(row.status, row.sources, row.reason)
    return f"{messages.STATUS_ICONS[row.status]} {title}: {label} ({row.seconds:.1f} s)"


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
    actions = feedback_actions(answer)
    blocks += source_blocks(answer, config, room=MAX_BLOCKS - len(blocks) - len(actions))
    blocks = _fit(blocks + actions)
    fallback = "\n\n".join(fallback_parts)
    if len(fallback) > MAX_FALLBACK_CHARS:
        fallback = fallback[: MAX_FALLBACK_CHARS - 1] + "…"
    return blocks, fallback


def source_blocks(answer: Answer, config: CollectionsConfig, *, room: int) -> list[dict[str, Any]]:
    """The answer's Sources (a heading, then context blocks of up to 10 sources) in at most ``room``
    blocks, one kept for a possible "more sources" note."""
    blocks: list[dict[str, Any]] = []
    source_elements = [
        {"type": "mrkdwn", "text": f"*[{n}]* {label} · {collection}"}
        for n, label, collection in source_labels(answer, config, link=safe_link, escape=neutralize)
    ]
    room -= 1
    chunks = [
        source_elements[i : i + MAX_CONTEXT_ELEMENTS]
        for i in range(0, len(source_elements), MAX_CONTEXT_ELEMENTS)
    ]
    if chunks:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "*Sources*"}]})
        room -= 1
    for chunk in chunks[: max(room, 0)]:
        blocks.append({"type": "context", "elements": chunk})
    return blocks


def feedback_actions(answer: Answer) -> list[dict[str, Any]]:
    """The feedback buttons under a found answer (none under a greeting or a "nothing found")."""
    if not answer.found:
        return []
    return [
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
    ]


def stream_footer(answer: Answer, config: CollectionsConfig) -> list[dict[str, Any]]:
    """A streamed answer's closing blocks (``chat.stopStream``): the same Sources and actions that
    end a posted answer, within the message limits."""
    actions = feedback_actions(answer)
    return _fit(source_blocks(answer, config, room=MAX_BLOCKS - len(actions)) + actions)


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
