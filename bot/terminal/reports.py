"""``confer eval`` and ``confer feedback``: reports written from the terminal."""

import argparse
import sys
from typing import TYPE_CHECKING

from bot.terminal.output import console, progress_bar, say_error

if TYPE_CHECKING:
    from rich.console import Console

    from bot.settings import ConferSettings

EXIT_OK = 0


def parse_since(text: str) -> float:
    """``YYYY-MM-DD`` (midnight UTC) or an ISO 8601 time (UTC unless it names its offset), as Unix
    time; raises ``ValueError`` with a message for people."""
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since: {text!r} is not a date; use YYYY-MM-DD or an ISO time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


async def run_eval(settings: "ConferSettings", args: argparse.Namespace, err: "Console") -> int:
    import json

    from bot import messages
    from bot.errors import DatasetError
    from bot.evaluation.report import markdown_report, questions_jsonl, write_plots
    from bot.evaluation.suites import evaluate
    from retrieval.errors import CollectionsFileError

    if not args.dataset.is_dir():
        raise DatasetError(f"{args.dataset}: no such folder")
    if not (args.dataset / "collections.yaml").is_file():
        raise CollectionsFileError(path=args.dataset / "collections.yaml", problems=["file not found"])
    if args.limit is not None and args.limit < 1:
        raise DatasetError("--limit must be at least 1")
    if args.conversations:
        return await _eval_conversations(settings, args, err)
    with progress_bar(err) as progress:
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
        say_error(messages.PLOTS_SKIPPED)
    if args.json:
        summary = {
            key: report[key]
            for key in (
                "overall",
                "by_type",
                "baseline",
                "questions",
                "not_found",
                "verdicts",
                "faithfulness",
                "followups",
            )
        }
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        console().print(markdown_report(report), markup=False)
        files = [args.out / "report.json", args.out / "report.md", args.out / "questions.jsonl", *plots]
        written = ", ".join(str(p) for p in files)
        console().print(f"wrote {written}", markup=False)
    return EXIT_OK


async def _eval_conversations(settings: "ConferSettings", args: argparse.Namespace, err: "Console") -> int:
    import json

    from bot.evaluation.report import conversation_markdown
    from bot.evaluation.suites import evaluate_conversations

    with progress_bar(err) as progress:
        task = progress.add_task("conversations", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        report = await evaluate_conversations(
            args.dataset, split=args.split, settings=settings, limit=args.limit, progress=advance
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "conversations.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "conversations.md").write_text(conversation_markdown(report))
    if args.json:
        sys.stdout.write(json.dumps({key: report[key] for key in ("overall", "by_type")}) + "\n")
    else:
        console().print(conversation_markdown(report), markup=False)
        console().print(
            f"wrote {args.out / 'conversations.json'}, {args.out / 'conversations.md'}", markup=False
        )
    return EXIT_OK


async def run_feedback(settings: "ConferSettings", *, since: float | None, as_json: bool) -> int:
    """``confer feedback``: the votes, oldest first, a few lines each (or JSON)."""
    import json
    from datetime import UTC, datetime

    from rich.text import Text

    from bot.chat.feedback import json_printable, printable
    from bot.terminal.traces import open_feedback_store

    store = await open_feedback_store(settings)
    try:
        votes = await store.votes(since=since)
    finally:
        await store.close()
    if as_json:
        listed = json.dumps({"votes": [v.as_json() for v in votes]}, ensure_ascii=False)
        sys.stdout.write(json_printable(listed) + "\n")
        return EXIT_OK
    out = console()
    if not votes:
        out.print("No votes yet." if since is None else "No votes since then.")
        return EXIT_OK
    for vote in votes:  # every stored text escaped: a comment may carry terminal escape sequences
        answer = " ".join(vote.answer.split())
        when = datetime.fromtimestamp(vote.at, UTC)
        head = (
            f"{when:%Y-%m-%d %H:%M} UTC  {'👍' if vote.vote == 'up' else '👎'}  "
            f"question {vote.question_id}  {vote.platform} {vote.workspace} {vote.channel}  "
            f"in {', '.join(vote.collections) or '-'}"
        )
        out.print(Text(printable(head), style="bold"))
        if vote.reason:
            reason = f"  reason: {vote.reason}" + (f": {vote.comment}" if vote.comment else "")
            out.print(Text(printable(reason)))
        shown = f"  answer: {answer[:300]}{'…' if len(answer) > 300 else ''}" if answer else "  answer: -"
        out.print(Text(printable(shown)))
        out.print(Text(printable(f"  passages: {', '.join(vote.passage_ids) or '-'}")))
        if vote.traced:  # how the answer was found, while its trace is kept
            out.print(Text(printable(f"  trace: confer trace {vote.question_id}")))
    ups = sum(1 for v in votes if v.vote == "up")
    out.print(f"{len(votes)} votes: {ups} 👍, {len(votes) - ups} 👎")
    return EXIT_OK
