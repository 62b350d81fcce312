"""Adaptive Cards for the status and the answer, and the activities that carry them.

Every string that came from a document, a model or the collections file goes through
``markup.neutralize``; the only links are sources' http(s) URLs (``markup.safe_link``). A card is
built as JSON objects, never from templates, so text cannot add elements or actions.
"""

import json
from collections.abc import Sequence
from typing import Any

from bot import messages
from bot.chat import trace_messages
from bot.chat.progress import FINAL_PHASES, Row, StatusState
from bot.chat.render import (
    AnswerFooter,
    answer_id,
    cite,
    collection_title,
    failed_collections,
    no_answer_runs,
    sentence_runs,
    source_labels,
    takes_votes,
)
from bot.chat.trace_view import TraceLine
from bot.teams.markup import code_line, neutralize, safe_link
from graph import Answer, AnswerSentence
from retrieval.collections import CollectionsConfig

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.5"
# Teams refuses messages above about 28 KB; keep the card well under it.
MAX_CARD_CHARS = 20_000
MAX_SOURCES = 20
FEEDBACK_KEY = "confer_feedback"
TRACE_KEY = "confer_trace"  # "How I found this": the answer's question id
AGAIN_KEY = "confer_again"  # "Research again" under a cached answer: its question, asked anew
ASK_KEY = "confer_ask"  # a suggested follow-up's button: the question a click asks
MAX_TITLE_CHARS = 75
REASON_INPUT = "confer_reason"  # the 👎 form's inputs, sent back in the activity's value
COMMENT_INPUT = "confer_comment"
MAX_COMMENT_CHARS = 1000

Card = dict[str, Any]


def _text(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


_LINE_BREAK = "\n\n"  # a single one is not shown in a card's text


def _cited(sentence: AnswerSentence) -> str:
    """A sentence from a document or a model, inert, with its ``[n]`` markers."""
    return cite(sentence.model_copy(update={"text": neutralize(sentence.text)}))


def _code(code: str) -> list[dict[str, Any]]:
    """A code block from a document as monospace lines, a ``TextBlock`` each (a card's Markdown
    shows no code fences, and no single line break); none for ``""``."""
    return [
        _text(code_line(line), fontType="Monospace", spacing="Small" if n == 0 else "None")
        for n, line in enumerate(code.splitlines())
    ]


def _card(body: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None) -> Card:
    card: Card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": body,
    }
    if actions:
        card["actions"] = actions
    return card


def status_lines(state: StatusState, config: CollectionsConfig) -> list[str]:
    """The status as lines of card text (collection titles neutralized)."""
    searching = [messages.searching_for(neutralize(state.searching))] if state.searching else []
    if state.phase in FINAL_PHASES:  # how a follow-up was read stays under the summary
        return [neutralize(state.summary), *searching]
    if state.phase == "queued":
        return [messages.status_queued(state.queue_position)]
    if not state.rows:
        return [messages.STATUS_READING]
    # a follow-up's standalone question (from what a person wrote) first, then the collections
    lines = [*searching, messages.status_researching(len(state.rows))]
    for name, row in state.rows.items():
        lines.append(_row_line(neutralize(collection_title(config, name)), row))
    for (entity, name), row in state.follow_ups.items():  # the entity comes from document text
        label = messages.following_up(neutralize(entity), neutralize(collection_title(config, name)))
        lines.append(_row_line(label, row))
    return lines


def _row_line(title: str, row: Row) -> str:
    if row.status is None:
        return f"🔄 {title}: {messages.STATUS_SEARCHING}"
    label = messages.status_row(row.status, row.sources, row.reason)
    return f"{messages.STATUS_ICONS[row.status]} {title}: {label} ({row.seconds:.1f} s)"


def status_card(state: StatusState, config: CollectionsConfig) -> Card:
    """The status lines and, while a model-written answer is being verified, its sentences that
    passed so far (the answer card that follows repeats them with their Sources)."""
    lines = status_lines(state, config)
    body = [_text(lines[0], weight="Bolder")]
    body.extend(_text(line, spacing="Small") for line in lines[1:])
    if state.answer and state.phase not in FINAL_PHASES:
        sentences = [_cited(s) for s in state.answer]
        body.append(_text(" ".join(sentences), spacing="Medium"))
    return _fit(_card(body))


def answer_card(answer: Answer, config: CollectionsConfig, footer: AnswerFooter | None = None) -> Card:
    """Sections with ``[n]`` markers, the partial note, Sources, feedback buttons (carrying the
    footer's question id) and suggested follow-ups."""
    body: list[dict[str, Any]] = []
    if not answer.found:
        for prose, code in no_answer_runs(
            answer, config, show=_cited, escape=neutralize, line_break=_LINE_BREAK
        ):
            body += [_text(prose), *_code(code)]
    for section in answer.sections:
        title = collection_title(config, section.collection)
        if title:
            body.append(_text(neutralize(title), weight="Bolder", spacing="Medium"))
        for prose, code in sentence_runs(section.sentences, _cited, line_break=_LINE_BREAK):
            body += [_text(prose), *_code(code)]
    failed = failed_collections(answer, config)
    if failed:
        note = neutralize(messages.partial_note(failed))
        body.append(_text(f"⚠️ {note}", color="Warning", isSubtle=False, spacing="Medium"))
    if answer.cached_at:
        body.append(_text(f"🗄️ {neutralize(messages.cached_note(answer.cached_at))}", isSubtle=True))
    sources = [
        _text(f"[{n}] {label} · {collection}", spacing="None", size="Small")
        for n, label, collection in source_labels(answer, config, link=safe_link, escape=neutralize)
    ]
    if sources:
        body.append(_text(messages.TEAMS_SOURCES, weight="Bolder", spacing="Medium"))
        body.extend(sources[:MAX_SOURCES])
        if len(sources) > MAX_SOURCES:
            more = messages.TEAMS_MORE_SOURCES.format(count=len(sources) - MAX_SOURCES)
            body.append(_text(more, size="Small", isSubtle=True))
    actions = _feedback_actions(answer, footer) if takes_votes(answer) else []
    if footer is not None and footer.traced and footer.question_id:
        actions.append(
            {
                "type": "Action.Submit",
                "title": trace_messages.TRACE_LABEL,
                "data": {TRACE_KEY: footer.question_id},
            }
        )
    asked = answer.trace.question if answer.trace is not None else ""
    if answer.cached_at and asked:
        actions.append(
            {"type": "Action.Submit", "title": messages.RESEARCH_AGAIN_LABEL, "data": {AGAIN_KEY: asked}}
        )
    actions += _suggestion_actions(footer, config)
    return _fit(_card(body, actions or None))


def _suggestion_actions(footer: AnswerFooter | None, config: CollectionsConfig) -> list[dict[str, Any]]:
    actions = []
    for suggestion in footer.suggestions[:3] if footer else ():
        if suggestion.targets:
            label = messages.ask_in(", ".join(collection_title(config, n) for n in suggestion.targets))
        else:
            label = suggestion.question
        title = " ".join(label.split()).replace("<", "‹").replace(">", "›")
        if len(title) > MAX_TITLE_CHARS:
            title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
        actions.append({"type": "Action.Submit", "title": title, "data": {ASK_KEY: suggestion.text}})
    return actions


def _feedback_actions(answer: Answer, footer: AnswerFooter | None) -> list[dict[str, Any]]:
    """👍 sends its vote at once; 👎 opens a short form in the card (a reason, optional text) whose
    Send carries the vote with them."""
    ident = footer.question_id if footer and footer.question_id else answer_id(answer)
    form = _card(
        [
            _text(messages.FEEDBACK_FORM_INTRO),
            {
                "type": "Input.ChoiceSet",
                "id": REASON_INPUT,
                "label": messages.FEEDBACK_FORM_REASON,
                "style": "expanded",
                "isRequired": True,
                "errorMessage": messages.FEEDBACK_FORM_REASON,
                "choices": [
                    {"title": label, "value": reason} for reason, label in messages.FEEDBACK_REASONS.items()
                ],
            },
            {
                "type": "Input.Text",
                "id": COMMENT_INPUT,
                "label": messages.FEEDBACK_FORM_COMMENT,
                "isMultiline": True,
                "maxLength": MAX_COMMENT_CHARS,
            },
        ],
        [
            {
                "type": "Action.Submit",
                "title": messages.FEEDBACK_FORM_SUBMIT,
                "data": {FEEDBACK_KEY: "down", "answer": ident},
            }
        ],
    )
    return [
        {
            "type": "Action.Submit",
            "title": messages.TEAMS_FEEDBACK_UP,
            "data": {FEEDBACK_KEY: "up", "answer": ident},
        },
        {"type": "Action.ShowCard", "title": messages.TEAMS_FEEDBACK_DOWN, "card": form},
    ]


def _size(card: Card) -> int:
    return len(json.dumps(card, ensure_ascii=False))


def _fit(card: Card) -> Card:
    """Within the size limit: drop trailing source lines, then shorten the longest paragraph."""
    body: list[dict[str, Any]] = card["body"]
    for block in body:  # no single paragraph may crowd out the sources
        if len(block["text"]) > MAX_CARD_CHARS // 2:
            block["text"] = _shorten(block["text"], MAX_CARD_CHARS // 2)
    while _size(card) > MAX_CARD_CHARS:
        small = [i for i, block in enumerate(body) if block.get("size") == "Small"]
        if small:
            del body[small[-1]]
            continue
        longest = max(body, key=lambda block: len(block["text"]))
        keep = len(longest["text"]) - (_size(card) - MAX_CARD_CHARS) - 100
        if keep <= 0:
            body.remove(longest)
            continue
        longest["text"] = _shorten(longest["text"], keep)
    return card


def _shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary, ending in an ellipsis."""
    cut = text[: max(limit - 2, 0)]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip("\\") + " …"


def trace_card(lines: Sequence[TraceLine]) -> Card:
    """ "How I found this" as a card: headings bold, items indented by their depth; every line may
    hold document text (titles, queries, sentences) and is neutralized; within the size limit."""
    body = [
        _text(neutralize(line.text), weight="Bolder", spacing="Medium")
        if line.depth == 0
        else _text(
            ("• " if line.depth == 1 else "  ◦ ") + neutralize(line.text), spacing="None", size="Small"
        )
        for line in lines
    ]
    return _fit(_card(body))


def card_activity(card: Card, *, summary: str = "") -> dict[str, Any]:
    """A message activity carrying one Adaptive Card (``summary`` shows in notifications)."""
    activity: dict[str, Any] = {
        "type": "message",
        "attachments": [{"contentType": CARD_CONTENT_TYPE, "content": card}],
    }
    if summary:
        activity["summary"] = summary
    return activity


def text_activity(text: str) -> dict[str, Any]:
    """A plain message for sentences from ``bot.messages`` (Markdown, no mentions)."""
    return {"type": "message", "text": text, "textFormat": "markdown"}
