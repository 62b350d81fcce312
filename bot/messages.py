"""Every sentence Confer says to people, in one place (errors, replies, status wording)."""

import difflib
from collections.abc import Sequence

from bot.chat.access import PlaceDeniedError
from bot.errors import DatasetError, EmptyQuestionError
from bot.settings import SettingsError
from graph import Answer, CollectionAccessError, Derived, FindingStatus, QuestionKind, Suggestion
from retrieval.errors import (
    CollectionsFileError,
    ConferError,
    DataDirError,
    DocumentLoadError,
    EmbeddingError,
    IndexingError,
    RetrievalError,
    SourceError,
    SourceProblem,
)
from retrieval.passages import TEXT_FORMAT

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

EMPTY_QUESTION = 'Please ask a question in words, for example: confer ask "How long is parental leave?"'
NOTHING_FOUND = (
    "I found nothing about that in {collections}. Try other words, or name a collection with in:NAME."
)
# Nothing retrieved answers: the closest sentences are shown as what they are; or nothing
# retrieved is related at all.
NOT_ANSWERED = "I searched {collections} but found no direct answer."
CLOSEST = "The closest I found, which may not answer it: {sentence}"
NOTHING_RELATED = "I searched {collections} but found nothing related to this."
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


def not_indexed_yet(titles: Sequence[str]) -> str:
    """``confer ask`` before ``confer index``: nothing could be searched, and what to run."""
    return (
        f"Nothing to search yet: {', '.join(titles)} not indexed. Run `confer index` first, then ask again."
    )


def partly_indexed(titles: Sequence[str]) -> str:
    """Under a partial answer in the terminal: the collections it lacks because they were never indexed."""
    them = "it" if len(titles) == 1 else "them"
    return f"{', '.join(titles)} not indexed yet: run `confer index` to search {them} too."


INTERRUPTED = "I was interrupted before I could finish. Please ask again."
TIMED_OUT = "That took longer than the time allowed, so I stopped. Please try again or narrow the question."
UNEXPECTED = "Something went wrong on my side while answering. Please try again."
PLOTS_SKIPPED = (
    "plots skipped: matplotlib is not installed; in this checkout `make eval` installs it "
    "(or run .venv/bin/pip install -e '.[eval]')"
)

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


def following_up(entity: str, collection_title: str) -> str:
    """Progress for a follow-up round: what the first round's evidence named, and where it is sought."""
    return f"Following up: {entity} in {collection_title}"


def partial_note(failed: Sequence[tuple[str, FindingStatus, str]]) -> str:
    """The note under a partial answer: which collections are missing from it and why."""
    parts = [
        f"{title} ({'timed out' if status == 'timeout' else failure_reason(reason)})"
        for title, status, reason in failed
    ]
    return "This answer is partial: " + ", ".join(parts) + " could not be searched."


def _unknown_name(name: str, allowed: Sequence[str]) -> str:
    """``'enginering' (did you mean 'engineering'?)``: only names this place may search are offered."""
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    return f"'{name}' (did you mean '{close[0]}'?)" if close else f"'{name}'"


def place_denied(places: Sequence[str]) -> str:
    """Confer may not be used here (an unlisted channel, a direct message); ``places`` are where it
    may, as the surface writes them (none when the surface cannot name them)."""
    if not places:
        return "Confer is not enabled in this conversation. Ask whoever runs Confer where it may be used."
    return "Confer is not enabled in this conversation. You can ask me in " + ", ".join(places) + "."


def collection_access(error: CollectionAccessError) -> str:
    if isinstance(error, PlaceDeniedError):
        return place_denied(())
    problems = []
    if error.unknown:
        problems.append(
            "there is no collection " + ", ".join(_unknown_name(n, error.allowed) for n in error.unknown)
        )
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
    if isinstance(error, SourceError):
        return source_problem(error)
    if isinstance(error, RetrievalError):
        return (
            f"The search index for '{error.collection}' could not be read ({error.reason}); "
            "try `confer index`."
        )
    if isinstance(error, IndexingError):
        if isinstance(error.__cause__, EmbeddingError):
            fix = (
                "Check EMBEDDINGS_BASE_URL, EMBEDDINGS_MODEL and EMBEDDINGS_API_KEY, "
                "or set CONFER_EMBEDDINGS=local or off."
                if error.__cause__.model.startswith("endpoint:")
                else "Or set CONFER_EMBEDDINGS=off to search by words only."
            )
            return (
                f"Could not embed the passages of collection '{error.collection}' with "
                f"{error.__cause__.model} ({error.__cause__.reason}); the previous index is unchanged. {fix}"
            )
        return (
            f"Could not write collection '{error.collection}' to the search index; "
            "the previous index is unchanged."
        )
    if isinstance(error, DataDirError):
        return data_dir_unusable(str(error.path), error.reason)
    if isinstance(error, SettingsError):
        return "Invalid configuration: " + "; ".join(error.problems)
    if isinstance(error, EmptyQuestionError):
        return EMPTY_QUESTION
    if isinstance(error, DatasetError):
        return f"Dataset: {error}"
    return UNEXPECTED


def data_dir_unusable(path: str, reason: str) -> str:
    """The embedded index's folder cannot be created or written: which variable, which folder, the fix."""
    return (
        f"CONFER_DATA_DIR: cannot use {path} for the search index and Confer's state ({reason.lower()}). "
        "Set CONFER_DATA_DIR to a folder this user can write (the container image uses /data), "
        "or create this one and give this user write access."
    )


# confer serve without what it needs (each joins "Invalid configuration: ...").
_TEAMS_VARIABLES = (
    "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID, …__TENANTID and …__CLIENTSECRET (or …__CERTPFXFILE)"
)
SERVE_NEEDS_A_SURFACE = (
    "confer serve needs credentials for Slack or Teams, and none are set. Slack: SLACK_BOT_TOKEN with "
    "SLACK_SIGNING_SECRET (HTTP mode), or SLACK_BOT_TOKEN with SLACK_APP_TOKEN (Socket Mode). Teams: "
    f"{_TEAMS_VARIABLES}, or CONFER_TEAMS_LOCAL=true to try it in Agents Playground (make playground). "
    "The README's Slack and Microsoft Teams sections say where each value is found"
)
SERVE_NEEDS_SLACK_BOT = (
    "SLACK_BOT_TOKEN: required for Slack (the Bot User OAuth Token, xoxb-…, on the app's "
    "OAuth & Permissions page once it is installed)"
)
SERVE_NEEDS_SLACK_VERIFICATION = (
    "SLACK_SIGNING_SECRET (HTTP mode: Basic Information, App Credentials) or SLACK_APP_TOKEN "
    "(Socket Mode: an app-level token, xapp-…, with connections:write): one is required for Slack"
)


COMMAND_USAGE = (
    "*Usage:* `/ask [in:a,b] QUESTION`\n"
    "• `/ask How long is parental leave?` researches every collection this channel may search.\n"
    "• `/ask in:security,engineering Who approves production access?` searches only those.\n"
    "• `/ask list` shows the collections of this channel; `/ask help` shows this."
)
ANSWERING_PRIVATELY = (
    "I can't post in this conversation, so I'm answering here, visible only to you. "
    "For answers in a thread everyone can see, invite me to a channel (`/invite @Confer`) and ask there."
)
NOT_POSTED = (
    "I could not post in this thread, so your question was not answered. Please try again in a minute."
)
# Said where the answer went when its post may have landed (the reply lost, the chat unreadable)
# and there is no status message to say it: true whether the answer is there or not.
POST_UNCERTAIN = "⚠️ My answer may not have been posted: if you do not see it above, please ask again."
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


# Status messages (every platform): the lines of a status while a question is researched.
STATUS_READING = "🔎 Reading your question…"
STATUS_SEARCHING = "searching…"
STATUS_TIMED_OUT = "⏱️ Stopped: the question ran out of time."
STATUS_INTERRUPTED = "⏹️ Interrupted."
STATUS_POST_FAILED = "⚠️ Could not post the answer."
# The answer's post may have reached the chat but its reply was lost, and the chat could not be read.
STATUS_POST_UNCERTAIN = "⚠️ The answer may not have been posted: if it is not below, please ask again."
STATUS_UNEXPECTED = "⚠️ Something went wrong."
STATUS_ICONS: dict[FindingStatus, str] = {"ok": "✅", "empty": "➖", "failed": "⚠️", "timeout": "⏱️"}


def plural(count: int, word: str) -> str:
    """``1 collection``, ``2 collections``."""
    return f"{count} {word}{'s' if count != 1 else ''}"


def status_queued(ahead: int) -> str:
    return f"⏳ Queued: {plural(ahead, 'question')} ahead of yours."


def searching_for(question: str) -> str:
    """A follow-up's status: the standalone question it became (neutralized by the caller)."""
    return f"Searching: {question}"


def status_researching(collections: int) -> str:
    return f"🔎 Researching {plural(collections, 'collection')}:"


def status_row(status: FindingStatus, sources: int, reason: str) -> str:
    """What one finished collection says, without its title: ``done, 3 sources``."""
    label = STATUS_LABELS[status]
    if status == "ok":
        return f"{label}, {plural(sources, 'source')}"
    if status == "failed":
        return f"{label} ({failure_reason(reason)})"
    return label


# Slack's native agent status (the loading state under the question) and its streamed plan's tasks.
LOADING_STATUS = "is researching…"


def task_output(status: FindingStatus, sources: int, reason: str) -> str:
    """What one finished task shows in a streamed plan: ``3 sources``, ``No results``."""
    if status == "ok":
        return plural(sources, "source")
    if status == "empty":
        return "No results"
    if status == "failed":
        return f"Failed: {failure_reason(reason)}"
    return "Timed out"


def task_details(seconds: float) -> str:
    return f"{seconds:.1f} s"


def status_done(*, seconds: float, collections: int, sources: int, unavailable: int) -> str:
    line = f"✅ Done in {seconds:.1f} s · {plural(collections, 'collection')} · {plural(sources, 'source')}"
    return line + (f" · {unavailable} unavailable" if unavailable else "")


# Microsoft Teams.
TEAMS_SOURCES = "Sources"
TEAMS_FEEDBACK_UP = "👍 Helpful"
TEAMS_FEEDBACK_DOWN = "👎 Not helpful"
TEAMS_FEEDBACK_THANKS = "Thanks for the feedback."
TEAMS_MORE_SOURCES = "…and {count} more sources."
TEAMS_USAGE = (
    "Mention me with a question (in a personal chat, just write it) and I'll research it across the "
    "document collections this conversation may search, then answer with numbered sources.\n\n"
    "- `in:a,b` anywhere in the question limits the search to those collections.\n"
    "- `list` shows the collections; `help` shows this."
)


# Feedback on answers and suggested follow-ups (every platform).
FEEDBACK_THANKS = "Thanks for the feedback: glad it helped."
FEEDBACK_NOT_KEPT = "Thanks for the feedback. It could not be saved right now, sorry."
FEEDBACK_REASON_THANKS = "Thanks: your feedback was recorded and helps improve the answers."
FEEDBACK_UP_LABEL = "Helpful"
FEEDBACK_DOWN_LABEL = "Not helpful"
FEEDBACK_FORM_TITLE = "What was wrong?"
FEEDBACK_FORM_SUBMIT = "Send"
FEEDBACK_FORM_CANCEL = "Cancel"
FEEDBACK_FORM_INTRO = "Tell us what was wrong with the answer. Only the Confer team reads this."
FEEDBACK_FORM_REASON = "Reason"
FEEDBACK_FORM_COMMENT = "Anything else? (optional)"
FEEDBACK_REASONS = {
    "wrong": "Wrong",
    "incomplete": "Incomplete",
    "outdated": "Out of date",
    "other": "Other",
}
SUGGESTIONS_LABEL = "Ask next:"
SUGGESTION_ALREADY_ASKED = "That follow-up was already asked in this thread: its answer is there."

RESEARCH_AGAIN_LABEL = "Research again"


def cached_note(researched_at: float) -> str:
    """Under an answer served from the answer cache: when it was researched."""
    from datetime import UTC, datetime

    when = datetime.fromtimestamp(researched_at, UTC)
    return f"Cached answer, from {when:%Y-%m-%d %H:%M} UTC."


def ask_in(title: str) -> str:
    """A suggested follow-up that asks the same question in another collection."""
    return f"Ask in {title}"


# The terminal (``confer ask``, ``confer index``, ``confer collections``): plain text, no Markdown.
TERMINAL_USAGE = (
    "Type a question and I'll research it across the collections, then answer with numbered sources.\n"
    "  in:a,b        anywhere in a question, searches only those collections\n"
    "  list          shows the collections\n"
    "  help          shows this\n"
    "  /new          starts a new conversation (follow-ups use the earlier questions until then)\n"
    "  empty line    quits (so do Ctrl-D, quit and exit)"
)
TERMINAL_LIST_INTRO = "Collections (in:NAME searches only that one):"
TERMINAL_NEW_CONVERSATION = "New conversation: earlier questions are forgotten."
ASK_JSON_NEEDS_QUESTION = 'ask --json needs a QUESTION: confer ask "QUESTION" --json'


def terminal_welcome(names: Sequence[str]) -> str:
    return f"Ask a question (help shows how; an empty line or Ctrl-D quits). Collections: {', '.join(names)}"


def terminal_researching(titles: Sequence[str]) -> str:
    return f"Researching {plural(len(titles), 'collection')}: {', '.join(titles)}"


def terminal_summary(*, seconds: float, collections: int, sources: int) -> str:
    """The line under an answer in the terminal."""
    return f"{seconds:.2f} s · {plural(collections, 'collection')} · {plural(sources, 'source')}"


def terminal_collections(entries: Sequence[tuple[str, str, str]]) -> list[str]:
    """``confer collections``: name, title and counts in aligned columns."""
    name_width = max((len(name) for name, _, _ in entries), default=0)
    title_width = max((len(title) for _, title, _ in entries), default=0)
    return [
        f"{name.ljust(name_width)}  {title.ljust(title_width)}  {counts}".rstrip()
        for name, title, counts in entries
    ]


def index_counts(documents: int, passages: int) -> str:
    return f"{plural(documents, 'document')}, {plural(passages, 'passage')}"


NOT_INDEXED = "not indexed"


_SOURCE_FIXES: dict[SourceProblem, str] = {
    "unreachable": "cannot be reached ({detail}): check its address and the network",
    "refused": "refused ({detail}): check its address and that Confer may read it",
    "not_found": "was not found ({detail}): check its address",
    "rate_limited": "kept answering 'too many requests' ({detail}): lower its rate or sync later",
    "credentials": "has no usable credentials ({detail})",
    "interrupted": "stopped answering half-way ({detail}): the next `confer index` resumes it",
}


def source_problem(error: SourceError) -> str:
    """One line naming the source, what went wrong and what to fix; the collection's other sources
    and the other collections are still indexed."""
    fix = _SOURCE_FIXES[error.problem].format(detail=error.detail or "no answer")
    return f"Collection '{error.collection}': {error.source} {fix}."


# Told privately to someone who asked in a channel (``bot.chat.audience``).
RESTRICTED_ELSEWHERE = (
    "Some documents that not everyone in this channel may read also match your question, so the "
    "answer here leaves them out. Ask me in a direct message to have them searched too."
)


def collection_unusable(name: str, problems: Sequence[str], path: str) -> str:
    """``confer index``: a collection left out for a misconfigured source entry, in one line naming
    what to fix; the other collections are indexed."""
    return (
        f"Collection '{name}' was not indexed: {'; '.join(problems)}. Fix it in {path}; "
        "the other collections are indexed."
    )


def index_source_report(
    name: str, label: str, *, added: int, changed: int, unchanged: int, deleted: int
) -> str:
    """One line per connector source after its sync in ``confer index``."""
    return f"{name}: {label}: {added} new, {changed} changed, {unchanged} unchanged, {deleted} deleted"


def index_round(every: str) -> str:
    """Said after each round of ``confer index --every``."""
    return f"next index in {every} (Ctrl-C stops)"


def index_report(
    name: str,
    *,
    documents: int,
    passages: int,
    added: int,
    removed: int,
    unchanged: int,
    skipped: int,
    earlier_format: int | None = None,
) -> str:
    """One line per collection after ``confer index`` (and first, when its index had been made
    from documents read by an older version, a line saying it was rebuilt)."""
    line = f"{name}: {index_counts(documents, passages)} (+{added} −{removed}, {unchanged} unchanged)"
    line += f", {plural(skipped, 'file')} skipped" if skipped else ""
    if earlier_format is None:
        return line
    return (
        f"{name}: the index was built by an older version of Confer, which read documents "
        f"differently (text format {earlier_format}, now {TEXT_FORMAT}): rebuilt.\n{line}"
    )


def derived_sentence(derived: Derived) -> str:
    """A sentence Confer derived from the cited ones (``graph.answer.verdict``): a comparison's
    verdict ("Yes: both A and B are P.") or the side it asks for ("A died first: …")."""
    a, b = derived.sides
    years = f"{derived.years[0]} for {a}, {derived.years[1]} for {b}" if derived.years else ""
    if derived.kind == "years":
        return f"{'Yes' if derived.yes else 'No'}: {years}."
    if derived.kind == "both":
        return f"Yes: both {a} and {b} are {derived.predicates[0]}."
    if derived.kind == "pair":
        p, q = derived.predicates
        return f"Yes: {a} is {_article(p)} and {b} is {_article(q)}."
    when = "first" if derived.earlier else "later"
    if derived.comparison:
        order = f"is {derived.comparison}"
    elif derived.event == "died":
        order = f"died {when}"
    else:
        order = f"{f'was {derived.event}' if derived.event else 'came'} {when}"
    return f"{derived.chosen} {order}: {years}."


def _article(words: str) -> str:
    return f"{'an' if words[:1].lower() in 'aeiou' else 'a'} {words}"


def worded(answer: Answer) -> Answer:
    """``answer`` with its derived sentences written (the graph leaves their text empty)."""
    if not any(s.derived for section in answer.sections for s in section.sentences):
        return answer
    sections = tuple(
        section.model_copy(
            update={
                "sentences": tuple(
                    s.model_copy(update={"text": derived_sentence(s.derived)}) if s.derived else s
                    for s in section.sentences
                )
            }
        )
        for section in answer.sections
    )
    return answer.model_copy(update={"sections": sections})


def suggestion_question(suggestion: Suggestion) -> Suggestion:
    """``suggestion`` with its question written: the graph names what to ask about."""
    if suggestion.question or not suggestion.about:
        return suggestion
    return suggestion.model_copy(update={"question": f"Tell me about {suggestion.about}"})
