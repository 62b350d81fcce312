"""Running the graph for one question and streaming its progress to a caller."""

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from graph.builder import ResearchGraph
from graph.context import GraphContext
from graph.events import AnswerReady, ProgressEvent
from graph.models import Question
from graph.state import ResearchState

RECURSION_LIMIT = 25


async def stream_research(
    graph: ResearchGraph,
    question: Question,
    context: GraphContext,
    *,
    sequential: bool = False,
) -> AsyncIterator[ProgressEvent]:
    """Yield progress events as they happen; the last one is ``AnswerReady``.

    Nodes put their events on a queue of this run (``GraphContext.emit``) while the graph runs in
    a task of its own; the caller gets each one as soon as the loop comes back to it, as it did
    through LangGraph's ``custom`` stream, without that stream's thread-safe hop per event.
    ``sequential`` runs one branch at a time (for benchmarks that contrast it with fan-out).
    """
    started = time.monotonic()
    config: RunnableConfig = {"recursion_limit": RECURSION_LIMIT}
    if sequential:
        config["max_concurrency"] = 1
    events: asyncio.Queue[ProgressEvent | None] = asyncio.Queue()
    state: ResearchState = {"question": question}
    run = asyncio.ensure_future(
        graph.ainvoke(state, config=config, context=replace(context, emit=events.put_nowait))
    )
    # Every event a node wrote is queued before the run ends, so the end comes after all of them.
    run.add_done_callback(lambda _: events.put_nowait(None))
    try:
        while (event := await events.get()) is not None:
            yield event
        final = cast(dict[str, Any], run.result())
    finally:
        if not run.done():  # the caller stopped listening (a timeout, say): stop the research too
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
    yield AnswerReady(answer=final["answer"], seconds=round(time.monotonic() - started, 4))
