"""The terminal surface: live sub-agent progress and the cited answer, drawn with rich."""

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from bot.chat.render import answer_paragraphs, cite, collection_title, failed_collections, no_answer_text
from bot.messages import (
    STATUS_LABELS,
    TERMINAL_USAGE,
    cached_note,
    failure_reason,
    following_up,
    partial_note,
    plural,
    terminal_researching,
    terminal_summary,
)
from graph import (
    Answer,
    AnswerReady,
    BranchFinished,
    BranchStarted,
    FollowUp,
    PlanReady,
    ProgressEvent,
    SentenceVerified,
)
from retrieval.collections import CollectionsConfig

_STYLES = {"ok": "green", "empty": "yellow", "failed": "red", "timeout": "red"}


class ProgressView:
    """One line per collection, updated in place on a terminal or printed line by line elsewhere.
    Give it the standard error console: progress is not the answer, so ``2>/dev/null`` drops it;
    a model-written answer's verified sentences go to ``answers`` (standard output) as they come."""

    def __init__(
        self, console: Console, config: CollectionsConfig, *, answers: Console | None = None
    ) -> None:
        self._console = console
        self._answers = answers or console
        self._config = config
        self._rows: dict[str, BranchFinished | None] = {}
        self._follow_ups: dict[tuple[str, str], BranchFinished | None] = {}
        self._live: Live | None = None
        self.sentences_shown = 0  # a model-written answer's verified sentences printed so far

    def _render(self) -> RenderableType:
        table = Table.grid(padding=(0, 1))
        for name, finished in self._rows.items():
            title = collection_title(self._config, name)
            if finished is None:
                table.add_row(Spinner("dots"), Text(title), Text("searching…", style="dim"))
            else:
                table.add_row(Text("•", style=_STYLES[finished.status]), Text(title), _status_text(finished))
        for (entity, name), done in self._follow_ups.items():
            label = Text(following_up(entity, collection_title(self._config, name)))
            if done is None:
                table.add_row(Spinner("dots"), label, Text("searching…", style="dim"))
            else:
                table.add_row(Text("•", style=_STYLES[done.status]), label, _status_text(done))
        return table

    async def handle(self, event: ProgressEvent) -> None:
        if isinstance(event, SentenceVerified):
            # A verified sentence of the answer: the answer's stream (stdout), not progress.
            if self.sentences_shown == 0:
                self.stop()  # the research is over: the answer is being written
                self._answers.print()
            self._answers.print(Text(cite(event.sentence)))
            self.sentences_shown += 1
        elif isinstance(event, PlanReady):
            self._rows = {name: self._rows.get(name) for name in event.collections}
            titles = [collection_title(self._config, n) for n in event.collections]
            names = ", ".join(titles)
            if self._console.is_terminal:
                self._console.print(Text(terminal_researching(titles), style="bold"))
                self._live = Live(
                    self._render(), console=self._console, refresh_per_second=12, transient=False
                )
                self._live.start()
            else:
                self._console.print(Text(f"Researching: {names}"))
        elif isinstance(event, BranchStarted):
            pass
        elif isinstance(event, FollowUp):
            for entity, name in event.targets:
                self._follow_ups[(entity, name)] = None
                if self._live is None:
                    self._console.print(Text(following_up(entity, collection_title(self._config, name))))
            if self._live is not None:
                self._live.update(self._render())
        elif isinstance(event, BranchFinished) and event.round > 1:
            self._follow_ups[(event.entity, event.collection)] = event
            if self._live is not None:
                self._live.update(self._render())
            else:
                label = following_up(event.entity, collection_title(self._config, event.collection))
                self._console.print(Text.assemble(f"  {label}: ", _status_text(event)))
        elif isinstance(event, BranchFinished):
            self._rows[event.collection] = event
            if self._live is not None:
                self._live.update(self._render())
            else:
                title = collection_title(self._config, event.collection)
                self._console.print(Text.assemble(f"  {title}: ", _status_text(event)))
        elif isinstance(event, AnswerReady):
            self.stop()

    def stop(self) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None


def _status_text(event: BranchFinished) -> Text:
    label = STATUS_LABELS[event.status]
    if event.status == "ok":
        label += f", {plural(event.sources, 'source')}"
    elif event.status == "failed":
        label += f" ({failure_reason(event.reason)})"
    return Text(f"{label} ({event.seconds:.2f} s)", style=_STYLES[event.status])


def render_answer(
    answer: Answer, config: CollectionsConfig, seconds: float, *, shown: int = 0
) -> RenderableType:
    """The answer, its notes and Sources; ``shown``: how many of its sentences were printed as
    they were verified (they open the answer, so its first paragraph is not printed again)."""
    parts: list[RenderableType] = [Text()]
    if answer.mode == "direct" and answer.kind == "help":  # the chat surfaces' usage names chat commands
        parts.append(Text(TERMINAL_USAGE + "\n"))
    elif not answer.found:
        gap = "\n" if answer.citations else ""  # a blank line before the closest find's Sources
        parts.append(Text(no_answer_text(answer, config) + gap))
    paragraphs = answer_paragraphs(answer, config)
    if shown and answer.sections and len(answer.sections[0].sentences) == shown:
        paragraphs = paragraphs[1:]
    for title, text in paragraphs:
        parts.append(Text.assemble((title, "bold cyan"), "\n", text, "\n") if title else Text(text + "\n"))
    failed = failed_collections(answer, config)
    if failed:
        parts.append(Text(partial_note(failed), style="yellow"))
    if answer.cached_at:
        parts.append(Text(cached_note(answer.cached_at) + "\n", style="dim"))
    if answer.citations:
        parts.append(Text("Sources", style="bold"))
        for citation in answer.citations:
            passage = citation.passage
            where = passage.url or passage.source
            parts.append(
                Text.assemble(
                    (f"[{citation.n}] ", "bold"),
                    passage.title,
                    (f" — {collection_title(config, passage.collection)}, {where}", "dim"),
                )
            )
    if answer.mode != "direct":  # a greeting or the usage searched nothing
        summary = terminal_summary(
            seconds=seconds, collections=len(answer.outcomes), sources=len(answer.citations)
        )
        parts.append(Text(f"\n{summary}", style="dim"))
    return Group(*parts)
