"""``confer`` command line: ``index``, ``ask``, ``collections``, ``serve``, ``eval`` and ``feedback``.

Answers go to stdout; progress, logs and errors to stderr. Exit 0 on success; 2 for bad input or
configuration, including a question with no words in it and a question asked before anything was
indexed; 1 for anything else. Each error is one line on stderr that says what to do next."""

import argparse
import contextlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot.terminal.indexing import index, index_every, list_collections, parse_every
from bot.terminal.output import console, say_error
from bot.terminal.reports import parse_since, run_eval, run_feedback

# Only argparse loads before the arguments are parsed: `confer --help` and usage errors answer at
# once, and each command imports what it uses (the graph only for `ask`/`eval`/`serve`, ingestion only
# for `index`, the Elasticsearch client only with ELASTICSEARCH_URL).
if TYPE_CHECKING:
    import asyncio

    from rich.console import Console

    from bot.chat.conversations import Conversations
    from bot.chat.memory import ThreadKey
    from bot.chat.service import ResearchService
    from bot.settings import ConferSettings
    from graph import Answer, Question
    from retrieval.collections import CollectionsConfig

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
HISTORY_FILE = "history"  # under CONFER_DATA_DIR: the interactive prompt's line history
HISTORY_LENGTH = 1000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.format_usage()}{self.prog}: {message}\n")


class _Version(argparse.Action):
    """``--version`` reads the installed package's version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help="show the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("confer")
        except PackageNotFoundError:  # running from a source tree that was never installed
            number = "(not installed)"
        sys.stdout.write(f"confer {number}\n")
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="confer",
        description="Research questions across document collections, with citations.",
        epilog="Settings come from the environment and .env (see README). "
        "confer COMMAND --help describes a command.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name, help=summary, description=f"{summary[0].upper()}{summary[1:]}. {description}"
        )

    index = command(
        "index",
        "ingest the sources of all (or the named) collections",
        "Reads the sources of each collection in the collections file into the search index. "
        "Running it again only applies what changed and removes passages of deleted files.",
    )
    index.add_argument("names", nargs="*", metavar="NAME", help="collections to index (default: all)")
    index.add_argument(
        "--every",
        type=parse_every,
        metavar="DURATION",
        help="index again after each DURATION (e.g. 15m, 1h, 90s) until stopped",
    )
    ask = command(
        "ask",
        "answer a question in the terminal",
        "Researches each relevant collection in parallel and prints a cited answer. Without a "
        "QUESTION, asks interactively (line editing and history; an empty line or Ctrl-D quits).",
    )
    ask.add_argument("question", nargs="?", metavar="QUESTION", help="the question (quote it)")
    ask.add_argument("--in", dest="targets", default="", metavar="a,b", help="search only these collections")
    ask.add_argument("--json", action="store_true", help="print one JSON object on stdout (with its trace)")
    ask.add_argument("--trace", action="store_true", help="after the answer, print how it was found")
    ask.add_argument("--fresh", action="store_true", help="research it even if an answer is cached")
    command(
        "collections",
        "list collections with document and passage counts",
        "Shows every collection of the collections file and what its index holds.",
    )
    command(
        "serve",
        "run the chat service: Slack and/or Teams, each enabled by its credentials",
        "HTTP on PORT (/slack/events, /api/messages, /metrics, /healthz, /readyz), or Slack's Socket "
        "Mode when SLACK_APP_TOKEN is set. Slack needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET; "
        "Teams needs its app id, secret and tenant, or CONFER_TEAMS_LOCAL=true (see README).",
    )
    evaluate = command(
        "eval",
        "retrieval, routing, citation and latency metrics on a benchmark",
        "Indexes the benchmark's collections into throw-away indexes, answers its questions and "
        "compares with a one-index baseline in the same run.",
    )
    evaluate.add_argument(
        "dataset",
        metavar="DATASET_DIR",
        type=Path,
        help="a folder with collections.yaml and questions_<split>.jsonl",
    )
    evaluate.add_argument("--split", default="dev", help="reads questions_<split>.jsonl (default: dev)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    evaluate.add_argument("--out", type=Path, default=Path("eval-results"), help="report folder")
    evaluate.add_argument("--limit", type=int, default=None, help="only the first N questions")
    evaluate.add_argument(
        "--conversations",
        action="store_true",
        help="the conversational evaluation instead: follow-ups built from the questions (see README)",
    )
    feedback = command(
        "feedback",
        "list the votes on answers (👍/👎, with reasons)",
        "Reads the feedback store (SQLite in CONFER_DATA_DIR, or PostgreSQL with DATABASE_URL): each "
        "vote with its time, reason, comment, question id, collections and the answer it rates.",
    )
    feedback.add_argument(
        "--since", metavar="DATE", default=None, help="only votes from DATE on (YYYY-MM-DD, or an ISO time)"
    )
    feedback.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    trace = command(
        "trace",
        "print how an answer posted in a chat was found",
        "Reads the trace kept with the answer (the question id its feedback carries, as confer "
        "feedback lists it): the plan, each search with its query and hits, the sentences dropped "
        "and why, and each model call. Traces are kept for CONFER_TRACE_RETENTION_DAYS.",
    )
    trace.add_argument("question_id", metavar="QUESTION_ID", help="the answer's question id")
    trace.add_argument("--json", action="store_true", help="print the trace as one JSON object")
    return parser


def has_words(text: str) -> bool:
    """Whether a question says anything once its ``in:`` targets are taken out: a letter or a digit.
    Emoji and punctuation alone ("🤔", "?!") are asked like an empty question."""
    from graph import extract_targets

    remaining, _ = extract_targets(text)
    return any(character.isalnum() for character in remaining)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command == "ask" and args.json and args.question is None:
        from bot import messages

        say_error(messages.ASK_JSON_NEEDS_QUESTION)  # not an interactive session, whose output is no JSON
        return EXIT_USAGE
    if args.command is None:
        sys.stderr.write(parser.format_usage())
        sys.stderr.write(
            "commands: index, ask, collections, serve, eval, feedback, trace (confer --help describes them)\n"
        )
        return EXIT_USAGE
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from bot import messages
    from bot.errors import DatasetError, EmptyQuestionError
    from bot.logs import configure_logging
    from bot.settings import SettingsError, load_settings
    from graph import CollectionAccessError
    from retrieval.collections import load_collections
    from retrieval.errors import CollectionsFileError, ConferError, DataDirError

    if args.command == "feedback" and args.since is not None:
        try:
            args.since = parse_since(args.since)
        except ValueError as exc:
            say_error(str(exc))
            return EXIT_USAGE
    bad_input = (
        CollectionsFileError,
        SettingsError,
        CollectionAccessError,
        EmptyQuestionError,
        DatasetError,
        DataDirError,
    )
    err = console(stderr=True)
    try:
        settings = load_settings()
        # The terminal commands show their own progress; per-question log lines are for the service
        # (or for anyone who sets CONFER_LOG_LEVEL).
        quiet = args.command != "serve" and "log_level" not in settings.model_fields_set
        configure_logging("WARNING" if quiet else settings.log_level, settings.log_format)
        if args.command in ("serve", "ask"):
            from bot.telemetry import configure_tracing

            configure_tracing()  # OTLP export when its endpoint is set (flushed at exit)
        if args.command == "eval":
            return asyncio.run(run_eval(settings, args, err))
        if args.command == "feedback":
            return asyncio.run(run_feedback(settings, since=args.since, as_json=args.json))
        config = load_collections(settings.collections_path, partial=args.command == "index")
        if args.command == "trace":
            from bot.terminal.traces import print_trace

            return asyncio.run(print_trace(settings, config, args.question_id, as_json=args.json))
        if args.command == "index":
            if args.every is not None:
                return asyncio.run(index_every(settings, args.names, args.every, err))
            return asyncio.run(index(settings, config, args.names, err))
        if args.command == "collections":
            return asyncio.run(list_collections(settings, config))
        if args.command == "serve":
            from bot.server import check_serve_settings, run_server

            check_serve_settings(settings)
            return asyncio.run(run_server(settings))
        return _ask(
            settings,
            config,
            args.question,
            args.targets,
            args.json,
            err,
            show_trace=args.trace,
            fresh=args.fresh,
        )
    except bad_input as exc:
        say_error(messages.describe_error(exc))
        return EXIT_USAGE
    except ConferError as exc:
        say_error(messages.describe_error(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception:
        # CONFER_LOG_LEVEL=DEBUG shows the traceback
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        say_error(messages.UNEXPECTED)
        return EXIT_ERROR


def _ask(
    settings: "ConferSettings",
    config: "CollectionsConfig",
    text: str | None,
    targets: str,
    as_json: bool,
    err: "Console",
    *,
    show_trace: bool = False,
    fresh: bool = False,
) -> int:
    """One question, or the interactive prompt: each question runs on the same event loop, and
    the prompt itself reads on the main thread (so Ctrl-C and readline behave as in any shell)."""
    import asyncio

    from bot.wiring import build_service

    async def start() -> "ResearchService":
        return build_service(settings, config=config)

    from bot import messages
    from bot.errors import EmptyQuestionError

    if text is not None and not has_words(text):
        raise EmptyQuestionError("no words")  # before the index and the model are loaded
    extra = [t.strip().lower() for t in targets.split(",") if t.strip()]
    with asyncio.Runner() as runner:
        service = runner.run(start())
        try:
            # What was asked is checked first (an unknown collection is bad input, indexed or not).
            question = service.make_question(text, extra_targets=extra) if text is not None else None
            if runner.run(_nothing_indexed(service)):
                say_error(messages.not_indexed_yet([c.title for c in config.collections]))
                return EXIT_USAGE
            if text is not None:
                return runner.run(
                    _ask_once(
                        service,
                        text,
                        extra,
                        as_json,
                        err,
                        question=question,
                        show_trace=show_trace,
                        fresh=fresh,
                    )
                )
            history = settings.data_dir / HISTORY_FILE
            return _interactive(runner, service, extra, err, history, show_trace=show_trace)
        finally:
            runner.run(service.close())


async def _nothing_indexed(service: "ResearchService") -> bool:
    """Whether no collection has an index yet: asking then can only fail, and `confer index` is
    what to run (one not indexed among others is named under the answer instead). An index that
    cannot be read is no answer here: the question goes on, and its collections report it."""
    from retrieval.errors import ConferError

    for collection in service.config.collections:
        try:
            if await service.backend.stats(collection) is not None:
                return False
        except ConferError:
            return False
    return True


async def _ask_once(
    service: "ResearchService",
    text: str,
    extra: list[str],
    as_json: bool,
    err: "Console",
    *,
    question: "Question | None" = None,
    on_answer: "Callable[[Answer], Awaitable[None]] | None" = None,
    show_trace: bool = False,
    fresh: bool = False,
) -> int:
    import json

    from bot import messages
    from bot.chat.render import answer_json, collection_title
    from bot.chat.service import QuestionTimeoutError
    from bot.terminal.surface import ProgressView, render_answer
    from graph import AnswerReady, ProgressEvent

    question = question or service.make_question(text, extra_targets=extra)
    out = console()
    view = None if as_json else ProgressView(err, service.config, answers=out)
    seconds = 0.0

    async def on_event(event: ProgressEvent) -> None:
        nonlocal seconds
        if isinstance(event, AnswerReady):
            seconds = event.seconds
        if view is not None:
            await view.handle(event)

    try:
        answer = await service.answer(question, surface="cli", on_event=on_event, fresh=fresh)
    except QuestionTimeoutError:
        if view is not None:
            view.stop()
        say_error(messages.TIMED_OUT)
        return EXIT_ERROR
    unindexed = [o.name for o in answer.outcomes if o.status == "failed" and o.reason == "not indexed"]
    if on_answer is not None:
        await on_answer(answer)
    if as_json:
        sys.stdout.write(json.dumps(answer_json(answer, service.config, seconds), ensure_ascii=False) + "\n")
    else:
        out.print(render_answer(answer, service.config, seconds, shown=view.sentences_shown if view else 0))
        if show_trace and answer.trace is not None:
            from bot.terminal.traces import trace_text

            out.print(trace_text(answer.trace, service.config))
    if unindexed:  # a partial answer: its note says which were not searched; here, what to do
        say_error(messages.partly_indexed([collection_title(service.config, n) for n in unindexed]))
    return EXIT_OK


def _interactive(
    runner: "asyncio.Runner",
    service: "ResearchService",
    extra: list[str],
    err: "Console",
    history: Path,
    *,
    show_trace: bool = False,
) -> int:
    from rich.text import Text

    from bot import messages
    from bot.chat.conversations import Conversations
    from bot.chat.memory import ThreadKey, build_local_memory
    from bot.errors import EmptyQuestionError
    from graph import CollectionAccessError

    out = console()
    err.print(Text(messages.terminal_welcome(service.config.names)))
    conversations = Conversations(memory=build_local_memory(), metrics=service.metrics)
    conversation = 1
    tty = sys.stdin.isatty() and out.is_terminal
    save_history = _line_editing(history) if tty else None
    while True:
        try:
            line = input("? " if tty else "")
        except EOFError:
            if tty:
                out.print()
            return EXIT_OK
        if save_history is not None:
            save_history()
        if not line.strip() or line.strip().lower() in ("quit", "exit"):
            return EXIT_OK
        word = line.strip().lower()
        if word == "/new":
            conversation += 1
            err.print(Text(messages.TERMINAL_NEW_CONVERSATION, style="dim"))
            continue
        if word in ("help", "/help", "?"):  # what the prompt offers, not a question to research
            out.print(Text(messages.TERMINAL_USAGE))
            out.print()
            continue
        if word in ("list", "/list"):
            out.print(Text(_collections_list(service)))
            out.print()
            continue
        if not has_words(line):
            say_error(messages.EMPTY_QUESTION)
            continue
        key = ThreadKey("cli", "local", "terminal", str(conversation))
        try:
            runner.run(_converse_once(service, conversations, key, line, extra, err, show_trace=show_trace))
        except CollectionAccessError as exc:
            say_error(messages.describe_error(exc))
        except EmptyQuestionError:
            say_error(messages.EMPTY_QUESTION)
        out.print()


async def _converse_once(
    service: "ResearchService",
    conversations: "Conversations",
    key: "ThreadKey",
    line: str,
    extra: list[str],
    err: "Console",
    *,
    show_trace: bool = False,
) -> int:
    """One turn of the terminal conversation: a follow-up is rewritten from the earlier turns
    (the rewrite is shown), answered, and remembered."""
    from rich.text import Text

    from bot import messages
    from graph import Answer

    prepared = await conversations.prepare(service, key, line, extra_targets=extra)
    if prepared.standalone.text != prepared.asked:
        err.print(Text(messages.searching_for(prepared.standalone.text), style="dim"))

    async def remember(answer: Answer) -> None:
        await conversations.remember(key, prepared, answer)

    return await _ask_once(
        service,
        line,
        extra,
        False,
        err,
        question=prepared.question,
        on_answer=remember,
        show_trace=show_trace,
    )


def _collections_list(service: "ResearchService") -> str:
    """``list`` at the prompt: every collection (the terminal is the operator's, it may search all)."""
    from bot import messages

    rows = [(c.name, c.title, c.description) for c in service.config.collections]
    return "\n".join(
        [messages.TERMINAL_LIST_INTRO, *("  " + line for line in messages.terminal_collections(rows))]
    )


def _line_editing(history: Path) -> "Callable[[], None] | None":
    """Readline editing for ``input()`` with the previous sessions' questions; returns the function
    that saves the history (after each line, so an interrupted session keeps it)."""
    try:
        import readline
    except ImportError:  # Python built without readline (e.g. Windows): plain input
        return None
    readline.set_history_length(HISTORY_LENGTH)
    with contextlib.suppress(OSError):
        readline.read_history_file(history)

    def save() -> None:
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(history)
            history.chmod(0o600)  # questions people asked: theirs only
        except OSError:
            pass  # a read-only data folder costs the history, never the session

    return save


if __name__ == "__main__":
    sys.exit(main())
