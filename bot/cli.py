"""``confer`` command line (DESIGN §7). Exit 0 on success, 2 for bad input or configuration,
1 for anything else; errors are one clear line on stderr."""

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from bot import messages
from bot.app import build_backend, build_service
from bot.errors import DatasetError
from bot.logs import configure_logging
from bot.render import answer_json
from bot.service import EmptyQuestionError, QuestionTimeoutError, ResearchService
from bot.settings import ConferSettings, SettingsError, load_settings
from bot.terminal import ProgressView, render_answer
from graph.events import AnswerReady, ProgressEvent
from graph.planning import CollectionAccessError
from retrieval.collections import CollectionsConfig, load_collections, resolve_sources
from retrieval.errors import CollectionsFileError, ConferError, IndexingError
from retrieval.ingest.pipeline import index_collection

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
_BAD_INPUT = (CollectionsFileError, SettingsError, CollectionAccessError, EmptyQuestionError, DatasetError)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"confer: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="confer", description="Research questions across document collections, with citations."
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    index = commands.add_parser("index", help="ingest the sources of all (or the named) collections")
    index.add_argument("names", nargs="*", metavar="NAME")
    ask = commands.add_parser("ask", help="answer a question in the terminal (no question: interactive)")
    ask.add_argument("question", nargs="?", metavar="QUESTION")
    ask.add_argument("--in", dest="targets", default="", metavar="a,b", help="search only these collections")
    ask.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    commands.add_parser("collections", help="list collections with document and passage counts")
    commands.add_parser(
        "serve", help="run the Slack service (HTTP mode, or Socket Mode with SLACK_APP_TOKEN)"
    )
    evaluate = commands.add_parser(
        "eval", help="retrieval, routing, citation and latency metrics on a benchmark"
    )
    evaluate.add_argument("dataset", metavar="DATASET_DIR", type=Path)
    evaluate.add_argument("--split", default="dev", help="reads questions_<split>.jsonl (default: dev)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    evaluate.add_argument("--out", type=Path, default=Path("eval-results"), help="report folder")
    evaluate.add_argument("--limit", type=int, default=None, help="only the first N questions")
    return parser


def say_error(line: str) -> None:
    """One line on stderr, never wrapped or styled, so scripts and people read the same."""
    sys.stderr.write(f"confer: {' '.join(line.split())}\n")
    sys.stderr.flush()


def _console(*, stderr: bool = False) -> Console:
    """Wrap to the terminal's width on a terminal; elsewhere keep each line whole."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console.soft_wrap = True
    return console


def _progress(err: Console) -> Progress:
    """A progress bar on stderr, shown only on a terminal."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    err = _console(stderr=True)
    try:
        settings = load_settings()
        # The terminal commands show their own progress; per-question log lines are for the service
        # (or for anyone who sets CONFER_LOG_LEVEL).
        quiet = args.command != "serve" and "log_level" not in settings.model_fields_set
        configure_logging("WARNING" if quiet else settings.log_level, settings.log_format)
        if args.command == "eval":
            return asyncio.run(_eval(settings, args, err))
        config = load_collections(settings.collections_path)
        if args.command == "index":
            return asyncio.run(_index(settings, config, args.names, err))
        if args.command == "collections":
            return asyncio.run(_collections(settings, config))
        if args.command == "serve":
            from bot.serve import check_slack_settings, run_server

            check_slack_settings(settings)
            return asyncio.run(run_server(settings))
        return asyncio.run(_ask(settings, config, args.question, args.targets, args.json, err))
    except _BAD_INPUT as exc:
        say_error(messages.describe_error(exc))
        return EXIT_USAGE
    except ConferError as exc:
        say_error(messages.describe_error(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception:
        logger.debug("unexpected error", exc_info=True)  # CONFER_LOG_LEVEL=DEBUG shows the traceback
        say_error(messages.UNEXPECTED)
        return EXIT_ERROR


async def _index(settings: ConferSettings, config: CollectionsConfig, names: list[str], err: Console) -> int:
    unknown = [n for n in names if config.get(n) is None]
    if unknown:
        raise CollectionAccessError(unknown=tuple(unknown), forbidden=(), allowed=config.names)
    chosen = [c for c in config.collections if not names or c.name in names]
    plans = [(c, resolve_sources(c, config)) for c in chosen]  # every path problem before any write
    backend = build_backend(settings)
    out = _console()
    failures = 0
    try:
        with _progress(err) as progress:
            for collection, files in plans:
                task = progress.add_task(collection.title, total=len(files))

                def advance(_path: Path, task: TaskID = task) -> None:
                    progress.advance(task)

                report = await index_collection(backend, collection, config, files=files, on_file=advance)
                failures += len(report.failures)
                for failure in report.failures:
                    say_error(messages.describe_error(failure))
                out.print(
                    f"{collection.name}: {report.documents} documents, {report.passages} passages "
                    f"(+{report.added} −{report.removed}, {report.unchanged} unchanged)"
                    + (f", {len(report.failures)} file(s) skipped" if report.failures else "")
                )
    except IndexingError as exc:
        say_error(messages.describe_error(exc))
        return EXIT_ERROR
    finally:
        await backend.close()
    return EXIT_OK


async def _eval(settings: ConferSettings, args: argparse.Namespace, err: Console) -> int:
    from bot.evaluation import evaluate, markdown_report, questions_jsonl, write_plots

    if not (args.dataset / "collections.yaml").is_file():
        raise CollectionsFileError(path=args.dataset / "collections.yaml", problems=["file not found"])
    if args.limit is not None and args.limit < 1:
        raise DatasetError("--limit must be at least 1")
    with _progress(err) as progress:
        task = progress.add_task("questions", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        report = await evaluate(
            args.dataset, split=args.split, settings=settings, limit=args.limit, progress=advance
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "questions.jsonl").write_text(questions_jsonl(report), encoding="utf-8")
    report.pop("per_question", None)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "report.md").write_text(markdown_report(report))
    try:
        plots = write_plots(report, args.out)
    except ImportError:
        plots = []
        say_error("plots skipped: matplotlib is not installed (pip install 'confer[eval]')")
    if args.json:
        summary = {key: report[key] for key in ("overall", "by_type", "baseline", "questions")}
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        _console().print(markdown_report(report), markup=False)
        files = [args.out / "report.json", args.out / "report.md", args.out / "questions.jsonl", *plots]
        written = ", ".join(str(p) for p in files)
        _console().print(f"wrote {written}", markup=False)
    return EXIT_OK


async def _collections(settings: ConferSettings, config: CollectionsConfig) -> int:
    backend = build_backend(settings)
    out = _console()
    try:
        for collection in config.collections:
            stats = await backend.stats(collection)
            counts = (
                "not indexed" if stats is None else f"{stats.documents} documents, {stats.passages} passages"
            )
            out.print(Text.assemble((collection.name, "bold"), f"  {collection.title} — {counts}"))
    finally:
        await backend.close()
    return EXIT_OK


async def _ask(
    settings: ConferSettings,
    config: CollectionsConfig,
    text: str | None,
    targets: str,
    as_json: bool,
    err: Console,
) -> int:
    service = build_service(settings, config=config)
    extra = [t.strip().lower() for t in targets.split(",") if t.strip()]
    try:
        if text is not None:
            return await _ask_once(service, text, extra, as_json, err)
        return await _interactive(service, extra, err)
    finally:
        await service.close()


async def _ask_once(
    service: ResearchService, text: str, extra: list[str], as_json: bool, err: Console
) -> int:
    question = service.make_question(text, extra_targets=extra)
    out = _console()
    view = None if as_json else ProgressView(out, service.config)
    seconds = 0.0

    async def on_event(event: ProgressEvent) -> None:
        nonlocal seconds
        if isinstance(event, AnswerReady):
            seconds = event.seconds
        if view is not None:
            await view.handle(event)

    try:
        answer = await service.answer(question, surface="cli", on_event=on_event)
    except QuestionTimeoutError:
        if view is not None:
            view.stop()
        say_error(messages.TIMED_OUT)
        return EXIT_ERROR
    if as_json:
        sys.stdout.write(json.dumps(answer_json(answer, service.config, seconds), ensure_ascii=False) + "\n")
    else:
        out.print(render_answer(answer, service.config, seconds))
    return EXIT_OK


async def _interactive(service: ResearchService, extra: list[str], err: Console) -> int:
    out = _console()
    out.print(
        Text("Ask a question (empty line or Ctrl-D to quit). Collections: " + ", ".join(service.config.names))
    )
    loop = asyncio.get_running_loop()
    while True:
        try:
            line = await loop.run_in_executor(None, _prompt, out.is_terminal)
        except EOFError:
            return EXIT_OK
        if not line.strip() or line.strip().lower() in ("quit", "exit"):
            return EXIT_OK
        try:
            await _ask_once(service, line, extra, False, err)
        except CollectionAccessError as exc:
            say_error(messages.describe_error(exc))
        except EmptyQuestionError:
            say_error(messages.EMPTY_QUESTION)
        out.print()


def _prompt(tty: bool) -> str:
    return input("? " if tty else "")


if __name__ == "__main__":
    sys.exit(main())
