"""LangGraph's own floor: the CPU one question's graph costs when its nodes do nothing.

The same shape as Confer's research graph (plan, one ``Send`` per collection to a research node
that writes two progress events and appends a finding through an ``operator.add`` reducer, reflect,
synthesize), streamed the way ``graph.runner`` streams it (``custom`` and ``values``), with nodes
that do no work: what is left is LangGraph's scheduling, state and stream machinery. Measured with
branches that return at once, and with branches that wait as long as the fan-out benchmark's searches
(each branch's end is then handled apart, after the process has been idle: more of LangGraph's work
and colder CPU caches). This module imports LangGraph directly: it measures the library, not Confer."""

import asyncio
import operator
import statistics
import time
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send


class _State(TypedDict, total=False):
    question: str
    collections: int
    wait: float
    findings: Annotated[list[Any], operator.add]
    answer: str


class _Task(TypedDict):
    collection: str
    wait: float


async def _plan(state: _State, runtime: Runtime[None]) -> dict[str, Any]:
    runtime.stream_writer({"event": "plan"})
    return {}


async def _dispatch(state: _State) -> list[Send]:
    wait = state.get("wait", 0.0)
    return [Send("research", _Task(collection=f"c{i}", wait=wait)) for i in range(state["collections"])]


async def _research(state: _Task, runtime: Runtime[None]) -> dict[str, Any]:
    runtime.stream_writer({"event": "started", "collection": state["collection"]})
    await asyncio.sleep(state["wait"])  # a branch awaits its search
    runtime.stream_writer({"event": "finished", "collection": state["collection"]})
    return {"findings": [state]}


async def _reflect(state: _State) -> dict[str, Any]:
    return {}


async def _synthesize(state: _State) -> dict[str, Any]:
    return {"answer": f"{len(state['findings'])} findings"}


def floor_graph() -> CompiledStateGraph[_State, None, _State, _State]:
    builder = StateGraph(_State)
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


async def floor_run_cpu(
    graph: CompiledStateGraph[_State, None, _State, _State], collections: int, wait: float
) -> float:
    """CPU seconds of one run of the do-nothing ``graph`` (``floor_graph()``) with ``collections``
    branches, each waiting ``wait`` seconds."""
    started = time.process_time()
    async for _ in graph.astream(
        {"question": "q", "collections": collections, "wait": wait}, stream_mode=["custom", "values"]
    ):
        pass
    return time.process_time() - started


async def measure_graph_floor(collections: int, runs: int, *, wait: float = 0.0) -> float:
    """Median CPU milliseconds of one run of the do-nothing graph with ``collections`` branches,
    each waiting ``wait`` seconds."""
    graph = floor_graph()
    await floor_run_cpu(graph, collections, wait)  # the first run pays one-off work
    cpu = [await floor_run_cpu(graph, collections, wait) for _ in range(runs)]
    return round(1000 * statistics.median(cpu), 2)
