"""Every sentence Confer says to people, in one place (errors, replies, status wording)."""

from collections.abc import Sequence

from bot.errors import DatasetError
from bot.service import EmptyQuestionError
from bot.settings import SettingsError
from graph.models import FindingStatus, QuestionKind
from graph.planning import CollectionAccessError
from retrieval.errors import (
    CollectionsFileError,
    ConferError,
    DocumentLoadError,
    IndexingError,
    RetrievalError,
)

USAGE = (
    "Ask me a question and I'll research it across the document collections this channel may "
    "search, then answer with numbered sources.\n"
    "• `in:a,b` anywhere in the question limits the search to those collections.\n"
    "• `list` shows the collections; `help` shows this."
)

DIRECT_REPLIES: dict[QuestionKind, str] = {
    "greeting": "Hello! Ask me anything about our documents and I'll answer with sources.",
    "thanks": "You're welcome!",
    "help": USAGE,
}

EMPTY_QUESTION = "Please ask a question: the text was empty."
NOTHING_FOUND = (
    "I found nothing about that in {collections}. Try other words, or name a collection with in:NAME."
)
NOT_ANSWERED = "I searched {collections} but found nothing that answers this."
CLOSEST = "The closest I found, which does not answer it: {sentence}"
ELSEWHERE = "{collections} may cover it: ask again with {hint}."
OTHER_LANGUAGE = (
    "Your question looks like {language}, and the documents may be in another language: "
    "try asking in their language."
)
LANGUAGE_NAMES = {
    "da": "Danish",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "it": "Italian",
    "nl": "Dutch",
    "no": "Norwegian",
    "pt": "Portuguese",
    "sv": "Swedish",
}
NOTHING_SEARCHED = "No collection could be searched, so there is no answer."
INTERRUPTED = "I was interrupted before I could finish. Please ask again."
TIMED_OUT = "That took longer than the time allowed, so I stopped. Please try again or narrow the question."
UNEXPECTED = "Something went wrong on my side while answering. Please try again."

STATUS_LABELS: dict[FindingStatus, str] = {
    "ok": "done",
    "empty": "no results",
    "failed": "failed",
    "timeout": "timed out",
}

_FAILURE_REASONS = {
    "not indexed": "not indexed yet",
    "search unavailable": "search unavailable",
    "model unavailable": "model unavailable",
    "time budget exceeded": "took too long",
}


def failure_reason(reason: str) -> str:
    return _FAILURE_REASONS.get(reason, "unavailable")


def partial_note(failed: Sequence[tuple[str, FindingStatus, str]]) -> str:
    """The note under a partial answer: which collections are missing from it and why."""
    parts = [
        f"{title} ({'timed out' if status == 'timeout' else failure_reason(reason)})"
        for title, status, reason in failed
    ]
    return "This answer is partial: " + ", ".join(parts) + " could not be searched."


def collection_access(error: CollectionAccessError) -> str:
    problems = []
    if error.unknown:
        problems.append("there is no collection " + ", ".join(f"'{n}'" for n in error.unknown))
    if error.forbidden:
        problems.append("this channel may not search " + ", ".join(f"'{n}'" for n in error.forbidden))
    allowed = ", ".join(error.allowed) if error.allowed else "none"
    return f"Sorry: {'; '.join(problems)}. Collections you can use here: {allowed}."


def describe_error(error: ConferError) -> str:
    """One line for a person, never the exception text of a library."""
    if isinstance(error, CollectionAccessError):
        return collection_access(error)
    if isinstance(error, CollectionsFileError):
        return f"Collections file {error.path}: " + "; ".join(error.problems)
    if isinstance(error, DocumentLoadError):
        return f"Skipped {error.path}: {error.reason}"
    if isinstance(error, RetrievalError):
        return (
            f"The search index for '{error.collection}' could not be read ({error.reason}); "
            "try `confer index`."
        )
    if isinstance(error, IndexingError):
        return (
            f"Could not write collection '{error.collection}' to the search index; "
            "the previous index is unchanged."
        )
    if isinstance(error, SettingsError):
        return "Invalid configuration: " + "; ".join(error.problems)
    if isinstance(error, EmptyQuestionError):
        return EMPTY_QUESTION
    if isinstance(error, DatasetError):
        return f"Dataset: {error}"
    return UNEXPECTED


COMMAND_USAGE = (
    "*Usage:* `/ask [in:a,b] QUESTION`\n"
    "• `/ask How long is parental leave?` researches every collection this channel may search.\n"
    "• `/ask in:security,engineering Who approves production access?` searches only those.\n"
    "• `/ask list` shows the collections of this channel; `/ask help` shows this."
)
SHUTTING_DOWN = "I'm restarting right now. Please ask again in a minute."


def collections_list(entries: list[tuple[str, str, str]]) -> str:
    """``/ask list``: name, title and description of each collection this channel may search."""
    if not entries:
        return "No collections may be searched in this channel."
    lines = ["Collections you can search here (use `in:NAME`):"]
    lines.extend(
        f"• `{name}`: {title}" + (f" — {description}" if description else "")
        for name, title, description in entries
    )
    return "\n".join(lines)


def asked_by(user_mention: str, question: str) -> str:
    """The root message of a ``/ask`` thread, restating the question and who asked."""
    return f"{user_mention} asked: {question}"
