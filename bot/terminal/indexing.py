"""``confer index`` (once, or ``--every`` DURATION) and ``confer collections``: the search index,
filled from each collection's sources and what it holds, with who may search what."""

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from bot.terminal.output import console, progress_bar, say_error, say_error_via

# Imported by the command line before its arguments are parsed: everything else loads when a
# command runs (ingestion only for `index`, the Elasticsearch client only with ELASTICSEARCH_URL).
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from bot.settings import ConferSettings
    from bot.terminal.sources import ConnectorSyncs
    from retrieval.backends import SearchBackend
    from retrieval.collections import Collection, CollectionsConfig

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def parse_every(text: str) -> float:
    """``--every``'s duration in seconds: a number with s, m or h (``15m``), at least 10 seconds."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh])\s*", text.lower())
    if not match:
        raise argparse.ArgumentTypeError(f"'{text}' is no duration: write it like 90s, 15m or 2h")
    seconds = float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)]
    if seconds < 10:
        raise argparse.ArgumentTypeError("--every must be at least 10s")
    return seconds


async def index_every(settings: "ConferSettings", names: list[str], every: float, err: "Console") -> int:
    """``confer index --every``: a round, a wait, and again; the collections file is read anew each
    round, and a round's problem is reported without stopping the next."""
    import asyncio

    from bot import messages
    from retrieval.collections import load_collections
    from retrieval.errors import CollectionsFileError, ConferError

    shown = f"{every / 3600:g}h" if every >= 3600 else f"{every / 60:g}m" if every >= 60 else f"{every:g}s"
    while True:
        try:
            await index(settings, load_collections(settings.collections_path, partial=True), names, err)
        except (CollectionsFileError, ConferError) as exc:
            say_error(messages.describe_error(exc))
        err.print(messages.index_round(shown), markup=False, highlight=False)
        await asyncio.sleep(every)


async def index(
    settings: "ConferSettings", config: "CollectionsConfig", names: list[str], err: "Console"
) -> int:
    import logging

    from bot import messages
    from bot.wiring import build_backend
    from graph import CollectionAccessError
    from retrieval.collections import resolve_sources, skipped_sources
    from retrieval.errors import IndexingError

    # Each skipped file is said below in one line of its own; the pipeline's log line would repeat it.
    logging.getLogger("retrieval.ingest.pipeline").setLevel(logging.ERROR)
    unknown = [n for n in names if config.get(n) is None and n not in {c.name for c in config.unusable}]
    if unknown:
        raise CollectionAccessError(unknown=tuple(unknown), forbidden=(), allowed=config.names)
    chosen = [c for c in config.collections if not names or c.name in names]
    plans = [(c, resolve_sources(c, config)) for c in chosen]  # every path problem before any write
    for collection in chosen:
        for path, reason in skipped_sources(collection, config):
            shown = path.relative_to(config.base_dir) if path.is_relative_to(config.base_dir) else path
            say_error(f"skipped {shown.as_posix()}: {reason}")
    from bot.terminal.sources import ConnectorSyncs, say_unusable

    sources = ConnectorSyncs(settings.data_dir, chosen)
    try:
        # Every collection and source that cannot be indexed, said before any write.
        broken = say_unusable(config, names, say_error) | await sources.check(say_error)
        backend = build_backend(settings)
        try:
            return await _index_plans(plans, config, backend, sources, broken, err)
        except IndexingError as exc:
            say_error(messages.describe_error(exc))
            return EXIT_ERROR
        finally:
            await backend.close()
    finally:
        await sources.close()


async def _index_plans(
    plans: "list[tuple[Collection, list[Path]]]",
    config: "CollectionsConfig",
    backend: "SearchBackend",
    sources: "ConnectorSyncs",
    broken: set[str],
    err: "Console",
) -> int:
    from bot import messages
    from retrieval.ingest.pipeline import index_collection

    out = console()
    interrupted = False
    with progress_bar(err) as progress:
        # While the bar is drawn, every line goes through its console, above the bar; a line
        # written past it (another console, or straight to the stream) would be drawn over.
        lines = progress.console if progress.live.is_started and out.is_terminal else out
        for collection, files in plans:
            if collection.name in broken:
                continue
            say = functools.partial(say_error_via, progress)
            documents, complete = await sources.sync(collection, progress, lines, say)
            interrupted = interrupted or not complete
            task = progress.add_task(collection.title, total=len(files))

            def advance(_path: Path, task: "TaskID" = task) -> None:
                progress.advance(task)

            embedding: TaskID | None = None

            def embedded(done: int, total: int, title: str = collection.title) -> None:
                nonlocal embedding
                if embedding is None:
                    embedding = progress.add_task(f"{title}: embedding", total=total)
                progress.update(embedding, completed=done)

            report = await index_collection(
                backend,
                collection,
                config,
                files=files,
                on_file=advance,
                on_embedded=embedded,
                documents=documents,
            )
            for failure in report.failures:
                say_error_via(progress, messages.describe_error(failure))
            line = messages.index_report(
                collection.name,
                documents=report.documents,
                passages=report.passages,
                added=report.added,
                removed=report.removed,
                unchanged=report.unchanged,
                skipped=len(report.failures),
                earlier_format=report.earlier_format,
            )
            lines.print(line, markup=False, highlight=False)
    if broken:
        return EXIT_USAGE
    return EXIT_ERROR if interrupted else EXIT_OK


async def list_collections(settings: "ConferSettings", config: "CollectionsConfig") -> int:
    from rich.text import Text

    from bot import messages
    from bot.wiring import build_backend

    backend = build_backend(settings)
    out = console()
    rows = []
    try:
        for collection in config.collections:
            stats = await backend.stats(collection)
            counts = (
                messages.NOT_INDEXED
                if stats is None
                else messages.index_counts(stats.documents, stats.passages)
            )
            rows.append((collection.name, collection.title, counts))
    finally:
        await backend.close()
    for (name, _, _), line in zip(rows, messages.terminal_collections(rows), strict=True):
        out.print(Text.assemble((line[: len(name)], "bold"), line[len(name) :]))
    _print_policy(config, out)
    return EXIT_OK


def _print_policy(config: "CollectionsConfig", out: "Console") -> None:
    """The channel policy as it applies (``bot.chat.access``), every other place last."""
    from rich.text import Text

    from bot.chat.access import effective_policy

    out.print(Text("\nWho may search what (the channels section):", style="bold"))
    for rule in effective_policy(config):
        place = "every other place (unlisted channels, DMs)" if rule.place == "*" else rule.place
        if not config.channels:
            place = "everywhere (no channels section)"
        allowed = ", ".join(rule.allow) if rule.allow else "nothing: Confer refuses to answer there"
        default = f"; default {', '.join(rule.default)}" if rule.default else ""
        out.print(Text(f"  {place}: {allowed}{default}"))
