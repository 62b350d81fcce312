import asyncio
import io
from pathlib import Path

from rich.console import Console

from bot.terminal.surface import ProgressView
from graph.events import BranchFinished, FollowUp, PlanReady
from retrieval.collections import Collection, CollectionsConfig

CONFIG = CollectionsConfig(
    collections=(
        Collection(name="films", title="Films", sources=("x",)),
        Collection(name="people", title="People", sources=("y",)),
    ),
    base_dir=Path(),
)


def test_the_terminal_shows_the_follow_up_round_and_keeps_the_first_rounds_lines() -> None:
    out = io.StringIO()
    view = ProgressView(Console(file=out, force_terminal=False, width=120), CONFIG)

    async def run() -> None:
        await view.handle(PlanReady(kind="factual", routing="automatic", collections=("films",)))
        await view.handle(BranchFinished(collection="films", status="ok", sources=3, seconds=0.05))
        await view.handle(FollowUp(round=2, targets=(("Delia Fontaine", "people"),)))
        await view.handle(
            BranchFinished(
                collection="people",
                status="failed",
                sources=0,
                seconds=0.01,
                reason="search unavailable",
                round=2,
                entity="Delia Fontaine",
            )
        )

    asyncio.run(run())
    lines = out.getvalue().splitlines()
    assert lines == [
        "Researching: Films",
        "  Films: done, 3 sources (0.05 s)",
        "Following up: Delia Fontaine in People",
        "  Following up: Delia Fontaine in People: failed (search unavailable) (0.01 s)",
    ]
