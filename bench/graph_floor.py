"""LangGraph's own floor: the CPU one question's graph costs when its nodes do nothing.

The same shape as Confer's research graph (plan, one ``Send`` per collection to a research node
that writes two progress events and appends a finding through an ``operator.add`` reducer, reflect,
synthesize), run the way ``graph.runner`` runs it (``ainvoke`` in a task, progress events put on a
queue the caller drains), with nodes that do no work: what is left is LangGraph's scheduling and
state machinery. This module imports LangGraph directly: it measures the library, not Confer."""

import asyncio
import operator
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send


class _State(TypedDict, total=False):
    question: str
    collections: int
    findings: Annotated[list[Any], operator.add]
    answer: str


class _Task(TypedDict):
    collection: str


@dataclass(frozen=True)
class _Context:
    emit: Callable[[Any], None]


async def _plan(state: _State, runtime: Runtime[_Context]) -> dict[str, Any]:
    runtime.context.emit({"event": "plan"})
    return {}


async def _dispatch(state: _State) -> list[Send]:
    return [Send("research", _Task(collection=f"c{i}")) for i in range(state["collections"])]


async def _research(state: _Task, runtime: Runtime[_Context]) -> dict[str, Any]:
    runtime.context.emit({"event": "started", "collection": state["collection"]})
    await asyncio.sleep(0)  # a branch awaits its search
    runtime.context.emit({"event": "finished", "collection": state["collection"]})
    return {"findings": [state]}


async def _reflect(state: _State) -> dict[str, Any]:
    return {}


async def _synthesize(state: _State) -> dict[str, Any]:
    return {"answer": f"{len(state['findings'])} findings"}


def _floor_graph() -> CompiledStateGraph[_State, _Context, _State, _State]:
    builder = StateGraph(_State, context_schema=_Context)
    builder.add_node("plan", _plan)
    builder.add_node("research", _research)
    builder.add_node("reflect", _reflect)
    builder.add_node("synthesize", _synthesize)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", _dispatch, ["research"])
    builder.add_edge("research", "reflect")
    builder.add_edge("reflect", "synthesize")
    builder.add_edge("synthesize", END)
    return builder.compile()


async def _run_once(graph: CompiledStateGraph[_State, _Context, _State, _State], collections: int) -> None:
    """One question's run, events drained as ``graph.runner.stream_research`` drains them."""
    events: asyncio.Queue[Any] = asyncio.Queue()
    run = asyncio.ensure_future(
        graph.ainvoke({"question": "q", "collections": collections}, context=_Context(events.put_nowait))
    )
    run.add_done_callback(lambda _: events.put_nowait(None))
    while await events.get() is not None:
        pass
    await run


async def measure_graph_floor(collections: int, runs: int) -> float:
    """Median CPU milliseconds of one run of the do-nothing graph with ``collections`` branches."""
    graph = _floor_graph()
    cpu: list[float] = []
    for run in range(runs + 1):
        started = time.process_time()
        await _run_once(graph, collections)
        if run:  # the first run pays one-off work
            cpu.append(time.process_time() - started)
    return round(1000 * statistics.median(cpu), 2)
