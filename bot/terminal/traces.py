"""``confer trace QUESTION_ID`` and ``confer ask --trace``: an answer's trace in the terminal."""

import json
import logging
import sys
from typing import TYPE_CHECKING

from rich.text import Text

from bot.chat import trace_messages
from bot.chat.feedback import (
    FeedbackStore,
    FeedbackUnavailableError,
    build_feedback_store,
    json_printable,
    printable,
)
from bot.chat.trace_view import plain_trace, trace_lines
from bot.settings import SettingsError
from bot.terminal.output import console, say_error
from graph import AnswerTrace
from retrieval.collections import CollectionsConfig

if TYPE_CHECKING:
    from bot.settings import ConferSettings

EXIT_OK, EXIT_NOT_FOUND = 0, 1


def trace_text(trace: AnswerTrace, config: CollectionsConfig) -> Text:
    """The trace, readable, every stored text escaped (a title or query may carry control
    characters)."""
    lines = trace_lines(trace, config)
    return Text("\n".join(printable(line) for line in plain_trace(lines).split("\n")))


async def open_feedback_store(settings: "ConferSettings") -> FeedbackStore:
    """The feedback store the settings name, for a terminal command; raises ``SettingsError``
    naming the setting when it cannot be opened."""
    # The pool retries a database that does not answer with a WARNING each time; the command says
    # it once, in its own line.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    url = settings.database_url.get_secret_value() if settings.database_url else None
    try:
        return await build_feedback_store(
            data_dir=settings.data_dir,
            database_url=url,
            ttl_days=settings.thread_ttl_days,
            trace_days=settings.trace_retention_days,
        )
    except FeedbackUnavailableError as exc:
        raise SettingsError([str(exc)]) from None


async def print_trace(
    settings: "ConferSettings", config: CollectionsConfig, question_id: str, *, as_json: bool
) -> int:
    """Print the trace kept under ``question_id``; 1 with one line on stderr when none is kept."""
    store = await open_feedback_store(settings)
    try:
        trace = await store.trace(question_id.strip())
    finally:
        await store.close()
    if trace is None:
        say_error(trace_messages.TRACE_NOT_FOUND)
        return EXIT_NOT_FOUND
    if as_json:
        sys.stdout.write(json_printable(json.dumps(trace.model_dump(mode="json"), ensure_ascii=False)) + "\n")
        return EXIT_OK
    console().print(trace_text(trace, config))
    return EXIT_OK
