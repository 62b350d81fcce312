"""How the terminal commands write: answers to stdout, progress and one-line errors to stderr."""

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def say_error(line: str) -> None:
    """One line on stderr, never wrapped or styled, so scripts and people read the same."""
    sys.stderr.write(f"confer: {' '.join(line.split())}\n")
    sys.stderr.flush()


def console(*, stderr: bool = False) -> "Console":
    """Wrap to the terminal's width on a terminal; elsewhere keep each line whole."""
    from rich.console import Console

    made = Console(stderr=stderr, highlight=False)
    if not made.is_terminal:
        made.soft_wrap = True
    return made


def progress_bar(err: "Console") -> "Progress":
    """A progress bar on stderr, shown only on a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=True,
    )


def say_error_via(progress: "Progress", line: str) -> None:
    """``say_error`` that does not tear a live progress bar."""
    if progress.live.is_started:
        progress.console.print(f"confer: {' '.join(line.split())}", markup=False, highlight=False)
    else:
        say_error(line)
