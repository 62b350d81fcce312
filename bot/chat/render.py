"""Turning an ``Answer`` into text: plain text with ``[n]`` markers, and the JSON of ``confer ask``."""

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.messages import (
    CLOSEST,
    DIRECT_REPLIES,
    ELSEWHERE,
    LANGUAGE_NAMES,
    NOT_ANSWERED,
    NOTHING_FOUND,
    NOTHING_RELATED,
    NOTHING_SEARCHED,
    OTHER_LANGUAGE,
    cached_note,
    partial_note,
)
from graph import Answer, AnswerSentence, FindingStatus, Suggestion
from retrieval.collections import CollectionsConfig


@dataclass(frozen=True)
class AnswerFooter:
    """What a posted answer carries under its sources, on every platform: the question id its
    feedback buttons send back (``""``: no feedback buttons), and suggested follow-ups."""

    question_id: str = ""
    suggestions: tuple[Suggestion, ...] = ()
    traced: bool = False  # the answer's trace is kept under ``question_id``: "How I found this"


def takes_votes(answer: Answer) -> bool:
    """Whether people can vote on the reply: every answer to a question that was researched,
    "not found" included (a wrong "not found" is the most useful vote); not a greeting or the usage."""
    return answer.mode != "direct"


_END = re.compile(r"([.!?…]+[\"')\]]*)$")


def cite(sentence: AnswerSentence) -> str:
    """The sentence with its markers before the closing punctuation: ``Text [1][2].``"""
    markers = "".join(f"[{n}]" for n in sentence.citations)
    match = _END.search(sentence.text)
    if match:
        return f"{sentence.text[: match.start()]} {markers}{match.group(1)}"
    return f"{sentence.text} {markers}"


def indented(code: str) -> str:
    """A code block as plain text shows it: each line indented by four spaces."""
    return "\n".join(f"    {line}" for line in code.splitlines())


def sentence_runs(
    sentences: Sequence[AnswerSentence],
    show: Callable[[AnswerSentence], str] = cite,
    *,
    line_break: str = "\n",
) -> list[tuple[str, str]]:
    """Sentences as paragraphs of text, each with the code block its last sentence introduces
    (``""``: none), which the surface shows after it: within a paragraph each sentence is shown by
    ``show``, a list's items each on a line of their own after a bullet, and what follows the list
    on a new line (``line_break``: how the surface breaks a line)."""
    runs: list[tuple[str, str]] = []
    text = ""
    after_item = False
    for sentence in sentences:
        shown = show(sentence)
        if sentence.item:
            text += f"{line_break}• {shown}" if text else f"• {shown}"
        elif text:
            text += f"{line_break}{shown}" if after_item else f" {shown}"
        else:
            text = shown
        after_item = sentence.item
        if sentence.code:
            runs.append((text, sentence.code))
            text, after_item = "", False
    if text:
        runs.append((text, ""))
    return runs


def joined(
    runs: Sequence[tuple[str, str]],
    *,
    text: Callable[[str], str] = str,
    code: Callable[[str], str] = indented,
    line_break: str = "\n",
) -> str:
    """Runs of text and code (``sentence_runs``, ``no_answer_runs``) as one text: each run's text
    shown by ``text``, its code by ``code`` (the surface's code block) on lines of its own, and the
    next run on a new line."""
    return line_break.join(
        f"{text(prose)}{line_break}{code(block)}" if block else text(prose) for prose, block in runs
    )


def sentences_text(
    sentences: Sequence[AnswerSentence],
    show: Callable[[AnswerSentence], str] = cite,
    *,
    line_break: str = "\n",
    code: Callable[[str], str] = indented,
) -> str:
    """Sentences as one paragraph (``sentence_runs``), a code block a sentence introduces shown
    after it by ``code``, on lines of its own."""
    return joined(sentence_runs(sentences, show, line_break=line_break), code=code, line_break=line_break)


def collection_title(config: CollectionsConfig, name: str) -> str:
    """A collection's title; ``""`` stays ``""`` (a model-written answer spans collections)."""
    if not name:
        return ""
    collection = config.get(name)
    return collection.title if collection else name


def answer_paragraphs(answer: Answer, config: CollectionsConfig) -> list[tuple[str, str]]:
    """(collection title, cited text) per section, in answer order."""
    return [(collection_title(config, s.collection), sentences_text(s.sentences)) for s in answer.sections]


def failed_collections(answer: Answer, config: CollectionsConfig) -> list[tuple[str, FindingStatus, str]]:
    return [
        (collection_title(config, o.name), o.status, o.reason)
        for o in answer.outcomes
        if o.status in ("failed", "timeout")
    ]


def no_answer_runs(
    answer: Answer,
    config: CollectionsConfig,
    *,
    show: Callable[[AnswerSentence], str] = cite,
    escape: Callable[[str], str] = str,
    line_break: str = "\n",
) -> list[tuple[str, str]]:
    """A reply with no answer as runs of text and code (``sentence_runs``): what was searched, the
    closest sentences found (with the code block one introduces), and where else to ask. The
    closest sentences are shown by ``show``, a list's items on lines of their own (``line_break``);
    Confer's own words by ``escape``. A surface that escapes each part so need not escape the whole,
    which would flatten the items' lines."""
    if answer.mode == "direct":
        return [(escape(DIRECT_REPLIES[answer.kind]), "")]
    searched = [collection_title(config, o.name) for o in answer.outcomes if o.status in ("ok", "empty")]
    if not searched:
        return [(escape(NOTHING_SEARCHED), "")]
    if not answer.retrieved:
        parts = [escape(NOTHING_FOUND.format(collections=", ".join(searched)))]
    elif answer.closest:
        parts = [escape(NOT_ANSWERED.format(collections=", ".join(searched)))]
    else:
        parts = [escape(NOTHING_RELATED.format(collections=", ".join(searched)))]
    runs: list[tuple[str, str]] = []
    if answer.closest:
        (first, code), *rest = sentence_runs(answer.closest, show, line_break=line_break)
        lead, _, after = CLOSEST.partition("{sentence}")
        parts += [escape(lead.strip()), first + escape(after)]  # joined by the space ``lead`` ends with
        for prose, block in rest:  # what follows a code block goes on from a new line
            runs.append((" ".join(parts), code))
            parts, code = [prose], block
        if code:
            runs.append((" ".join(parts), code))
            parts = []
    if answer.suggested:
        titles = ", ".join(collection_title(config, name) for name in answer.suggested)
        parts.append(escape(ELSEWHERE.format(collections=titles, hint="in:" + ",".join(answer.suggested))))
    if answer.other_language:
        language = LANGUAGE_NAMES.get(answer.other_language, answer.other_language)
        parts.append(escape(OTHER_LANGUAGE.format(language=language)))
    if parts:
        runs.append((" ".join(parts), ""))
    return runs


def no_answer_text(
    answer: Answer,
    config: CollectionsConfig,
    *,
    text: Callable[[str], str] = str,
    code: Callable[[str], str] = indented,
) -> str:
    """A reply with no answer as one text (``no_answer_runs``); ``text`` and ``code`` as ``joined``."""
    return joined(no_answer_runs(answer, config), text=text, code=code)


def plain_answer(answer: Answer, config: CollectionsConfig) -> str:
    """The answer as plain text; each section is attributed to its collection."""
    if not answer.found:
        body = no_answer_text(answer, config)
    else:
        body = "\n\n".join(
            f"{title}: {text}" if title else text for title, text in answer_paragraphs(answer, config)
        )
    failed = failed_collections(answer, config)
    if failed:
        body += "\n\n" + partial_note(failed)
    if answer.cached_at:
        body += "\n\n" + cached_note(answer.cached_at)
    return body


def answer_json(answer: Answer, config: CollectionsConfig, seconds: float) -> dict[str, Any]:
    """The ``confer ask --json`` object: the answer as plain text, its mode, whether it was found, one
    citation per ``[n]``, each collection's status, and every research round (README, Command line)."""
    return {
        "answer": plain_answer(answer, config),
        "mode": "llm" if answer.mode == "llm" else "extractive",
        "found": answer.found,
        "citations": [
            {
                "n": c.n,
                "title": c.passage.title,
                "url": c.passage.url or c.passage.source,
                "collection": c.passage.collection,
                "passage_id": c.passage.id,
                "quote": c.quote,
            }
            for c in answer.citations
        ],
        "collections": [
            {"name": o.name, "status": o.status, "sources": o.sources, "seconds": o.seconds}
            for o in answer.outcomes
        ],
        "rounds": [{"collections": list(r.collections), "queries": list(r.queries)} for r in answer.rounds],
        "seconds": round(seconds, 4),
        "trace": answer.trace.model_dump(mode="json") if answer.trace is not None else None,
    }


def answer_id(answer: Answer) -> str:
    """A short id for feedback: derived from the cited passages, never from people's text."""
    digest = hashlib.sha256("|".join(c.passage.id for c in answer.citations).encode()).hexdigest()
    return digest[:16]


def source_labels(
    answer: Answer,
    config: CollectionsConfig,
    *,
    link: Callable[[str, str], str],
    escape: Callable[[str], str],
) -> list[tuple[int, str, str]]:
    """``(n, label, collection title)`` per citation, in a platform's markup: ``link(url, title)``
    to the source's own URL, else its title and path; ``escape`` makes document text safe."""
    labels = []
    for citation in answer.citations:
        passage = citation.passage
        label = (
            link(passage.url, passage.title) if passage.url else escape(f"{passage.title} ({passage.source})")
        )
        labels.append((citation.n, label, escape(collection_title(config, passage.collection))))
    return labels
