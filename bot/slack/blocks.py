"""Block Kit for the status message and the answer, within Slack's limits."""

import json
from collections.abc import Sequence
from typing import Any

from bot import messages
from bot.chat import trace_messages
from bot.chat.progress import FINAL_PHASES, Row, StatusState
from bot.chat.render import (
    AnswerFooter,
    cite,
    collection_title,
    failed_collections,
    no_answer_text,
    sentences_text,
    source_labels,
    takes_votes,
)
from bot.chat.trace_view import TraceLine
from bot.messages import following_up, partial_note
from bot.slack.mrkdwn import CODE_FENCE, code_block, neutralize, plain_label, safe_link
from graph import Answer
from retrieval.collections import CollectionsConfig

MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3000
MAX_CONTEXT_ELEMENTS = 10
MAX_TOTAL_CHARS = 11_000  # msg_blocks_too_long has been seen near 13,000
MAX_FALLBACK_CHARS = 3_900
FEEDBACK_ACTION = "feedback"  # the feedback_buttons element; its values are "up:<id>" / "down:<id>"
LEGACY_FEEDBACK_ACTIONS = ("feedback_up", "feedback_down")  # plain buttons on answers posted before
SUGGEST_ACTION = "suggest_{n}"  # one per suggested follow-up; the value is the question to ask
FEEDBACK_BLOCK = "feedback:{id}"
TRACE_ACTION = "trace"  # "How I found this": its value is the question id
TRACE_BLOCK = "trace:{id}"
AGAIN_ACTION = "research_again"  # under a cached answer: its question, researched anew in the thread
SUGGEST_BLOCK = "suggest:{id}"
MAX_BUTTON_CHARS = 75  # Slack's limit for a button's text
MAX_VALUE_CHARS = 2000  # and for its value


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
    """Pieces of at most ``limit`` characters, each cut at the last line break or space that fits;
    the text is otherwise kept as it is (a code block's lines as they start), but a code block cut
    in two is closed at the cut and opened again in the next piece."""
    pieces: list[str] = []
    room = limit - len(CODE_FENCE) - 1  # for the fence a cut inside a code block closes
    while len(text) > limit:
        cut = max(text.rfind("\n", 0, room), text.rfind(" ", 0, room))
        if text[:cut].count(CODE_FENCE) % 2:  # inside a code block: a line is cut only where it ends
            cut = text.rfind("\n", 0, room)
        cut = cut + 1 if cut > len(CODE_FENCE) + 1 else room
        piece, text = text[:cut].rstrip(), text[cut:]
        if piece.count(CODE_FENCE) % 2:  # cut inside a code block: closed here, opened again after
            piece, text = f"{piece}\n{CODE_FENCE}", f"{CODE_FENCE}\n{text}"
        pieces.append(piece)
    pieces.append(text.rstrip())
    return [piece for piece in pieces if piece]


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def answer_actions(
    answer: Answer, footer: AnswerFooter | None, config: CollectionsConfig
) -> list[dict[str, Any]]:
    """The blocks under an answer's sources, for a posted answer and a stream's final blocks alike:
    "How I found this" (when the answer's trace is kept), Slack's feedback buttons (any researched
    answer, "not found" included, with a question id), then
    up to three suggested
    follow-ups as buttons (their text inert and within Slack's limits; the value is what a click
    asks)."""
    if footer is None:
        return []
    blocks: list[dict[str, Any]] = []
    ident = footer.question_id
    # Right under the sources: how they were found, and for a cached answer a fresh one.
    elements = []
    if footer.traced and ident:
        elements.append(
            {
                "type": "button",
                "action_id": TRACE_ACTION,
                "text": {"type": "plain_text", "text": trace_messages.TRACE_LABEL, "emoji": False},
                "value": ident,
            }
        )
    asked = answer.trace.question if answer.trace is not None else ""
    if answer.cached_at and asked and len(asked) <= MAX_VALUE_CHARS:
        elements.append(
            {
                "type": "button",
                "action_id": AGAIN_ACTION,
                "text": {"type": "plain_text", "text": messages.RESEARCH_AGAIN_LABEL, "emoji": False},
                "value": asked,
            }
        )
    if elements:
        blocks.append({"type": "actions", "block_id": TRACE_BLOCK.format(id=ident), "elements": elements})
    if takes_votes(answer) and ident:
        blocks.append(
            {
                "type": "context_actions",
                "block_id": FEEDBACK_BLOCK.format(id=ident),
                "elements": [
                    {
                        "type": "feedback_buttons",
                        "action_id": FEEDBACK_ACTION,
                        "positive_button": {
                            "text": {"type": "plain_text", "text": "👍"},
                            "accessibility_label": messages.FEEDBACK_UP_LABEL,
                            "value": f"up:{ident}",
                        },
                        "negative_button": {
                            "text": {"type": "plain_text", "text": "👎"},
                            "accessibility_label": messages.FEEDBACK_DOWN_LABEL,
                            "value": f"down:{ident}",
                        },
                    }
                ],
            }
        )
    buttons = []
    for n, suggestion in enumerate(footer.suggestions[:3]):
        value = suggestion.text
        if len(value) > MAX_VALUE_CHARS:
            continue
        if suggestion.targets:
            titles = ", ".join(collection_title(config, name) for name in suggestion.targets)
            label = messages.ask_in(titles)
        else:
            label = suggestion.question
        buttons.append(
            {
                "type": "button",
                "action_id": SUGGEST_ACTION.format(n=n),
                "text": {"type": "plain_text", "text": plain_label(label, MAX_BUTTON_CHARS), "emoji": False},
                "value": value,
            }
        )
    if buttons:
        blocks.append({"type": "actions", "block_id": SUGGEST_BLOCK.format(id=ident), "elements": buttons})
    return blocks


def answer_message(
    answer: Answer, config: CollectionsConfig, footer: AnswerFooter | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Blocks and plain fallback text of an answer; every document-derived string neutralized.
    ``footer``: feedback buttons and suggested follow-ups under the sources."""
    blocks: list[dict[str, Any]] = []
    fallback_parts: list[str] = []
    if not answer.found:
        text = no_answer_text(answer, config, text=neutralize, code=code_block)
        blocks.append(_section(text))
        fallback_parts.append(text)
    for section in answer.sections:
        title = neutralize(collection_title(config, section.collection))
        body = sentences_text(section.sentences, lambda sentence: neutralize(cite(sentence)), code=code_block)
        for piece in _split(f"*{title}*\n{body}" if title else body, MAX_SECTION_CHARS):
            blocks.append(_section(piece))
        fallback_parts.append(f"{title}: {body}" if title else body)
    failed = failed_collections(answer, config)
    if failed:
        note = neutralize(partial_note(failed))
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"⚠️ {note}"}]})
        fallback_parts.append(note)
    if answer.cached_at:
        note = neutralize(messages.cached_note(answer.cached_at))
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"🗄️ {note}"}]})
        fallback_parts.append(note)
    actions = answer_actions(answer, footer, config)
    blocks += source_blocks(answer, config, room=MAX_BLOCKS - len(blocks) - len(actions))
    blocks = _fit(blocks, MAX_BLOCKS - len(actions)) + actions
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


def stream_footer(
    answer: Answer, config: CollectionsConfig, footer: AnswerFooter | None = None
) -> list[dict[str, Any]]:
    """A streamed answer's closing blocks (``chat.stopStream``): the same Sources, feedback buttons
    and suggested follow-ups that end a posted answer, within the message limits."""
    actions = answer_actions(answer, footer, config)
    return (
        _fit(source_blocks(answer, config, room=MAX_BLOCKS - len(actions)), MAX_BLOCKS - len(actions))
        + actions
    )


def _size(blocks: Sequence[dict[str, Any]]) -> int:
    total = 0
    for block in blocks:
        if "text" in block:
            total += len(block["text"]["text"])
        for element in block.get("elements", []):
            total += len(element.get("text", "")) if isinstance(element.get("text"), str) else 0
    return total


def _fit(blocks: list[dict[str, Any]], max_blocks: int = MAX_BLOCKS) -> list[dict[str, Any]]:
    """Drop trailing source lines, then trailing answer sections, until within the size limits."""
    blocks = blocks[:max_blocks]
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


FEEDBACK_FORM = "confer_feedback"  # the 👎 form's callback_id
REASON_BLOCK = "reason"
COMMENT_BLOCK = "comment"
MAX_COMMENT_CHARS = 1000


def feedback_form(*, vote_id: str, channel: str, thread_ts: str) -> dict[str, Any]:
    """The short form a 👎 opens: a reason (wrong, incomplete, out of date, other) and optional
    free text. ``private_metadata`` carries the stored vote and where to acknowledge it."""
    options = [
        {"text": {"type": "plain_text", "text": label}, "value": reason}
        for reason, label in messages.FEEDBACK_REASONS.items()
    ]
    return {
        "type": "modal",
        "callback_id": FEEDBACK_FORM,
        "private_metadata": json.dumps({"vote": vote_id, "channel": channel, "thread": thread_ts}),
        "title": {"type": "plain_text", "text": messages.FEEDBACK_FORM_TITLE},
        "submit": {"type": "plain_text", "text": messages.FEEDBACK_FORM_SUBMIT},
        "close": {"type": "plain_text", "text": messages.FEEDBACK_FORM_CANCEL},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": messages.FEEDBACK_FORM_INTRO}},
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": {"type": "plain_text", "text": messages.FEEDBACK_FORM_REASON},
                "element": {"type": "radio_buttons", "action_id": REASON_BLOCK, "options": options},
            },
            {
                "type": "input",
                "block_id": COMMENT_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": messages.FEEDBACK_FORM_COMMENT},
                "element": {
                    "type": "plain_text_input",
                    "action_id": COMMENT_BLOCK,
                    "multiline": True,
                    "max_length": MAX_COMMENT_CHARS,
                },
            },
        ],
    }


_TRACE_BULLETS = ("", "• ", "    ◦ ")


def trace_message(lines: Sequence[TraceLine]) -> tuple[str, list[dict[str, Any]]]:
    """ "How I found this" as an ephemeral message: its fallback text and sections of lines, within
    Slack's section, block and total limits (lines past them are left out, ``…`` says so). Every
    line may hold document text (titles, queries, sentences): each is neutralized."""
    blocks: list[dict[str, Any]] = []
    current: list[str] = []
    total = 0
    for line in lines:
        text = neutralize(line.text)[: MAX_SECTION_CHARS - 10]
        text = f"*{text}*" if line.depth == 0 else _TRACE_BULLETS[min(line.depth, 2)] + text
        if total + len(text) > MAX_TOTAL_CHARS or len(blocks) == MAX_BLOCKS - 1:
            current.append("…")
            break
        if current and sum(len(x) + 1 for x in current) + len(text) > MAX_SECTION_CHARS:
            blocks.append(_section("\n".join(current)))
            current = []
        current.append(text)
        total += len(text) + 1
    if current:
        blocks.append(_section("\n".join(current)))
    return (neutralize(lines[0].text) if lines else ""), blocks
