"""Building the compiled research graph."""

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import GraphContext
from graph.nodes import (
    dispatch,
    follow_up,
    join_model,
    plan,
    reflect,
    research,
    respond_directly,
    synthesize,
)
from graph.spans import traced_node
from graph.state import ResearchState

ResearchGraph = CompiledStateGraph[ResearchState, GraphContext, ResearchState, ResearchState]


def build_research_graph() -> ResearchGraph:
    """START → plan ─┬─► respond_directly → END
    └─Send per task─► research ─► reflect ─┬─► synthesize → END
                          ▲                 │
                          └─Send follow-ups─┘  (at most ``max_rounds`` rounds)

    With a model, each round also gets a ``join_model`` branch: the model's plan (round 1) or its
    follow-up proposals (later rounds), asked beside the rule-based work, join the round when they
    arrive before its research branches have finished."""
    builder = StateGraph(ResearchState, context_schema=GraphContext)
    # Each node runs in an OpenTelemetry span of its own (``graph.spans``; nothing when not
    # exported); a ``research`` node's is its branch's span (``branch <collection>``).
    builder.add_node("plan", traced_node("plan", plan))
    builder.add_node("research", research)
    builder.add_node("join_model", traced_node("join_model", join_model))
    builder.add_node("reflect", traced_node("reflect", reflect))
    builder.add_node("synthesize", traced_node("synthesize", synthesize))
    builder.add_node("respond_directly", traced_node("respond_directly", respond_directly))
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", dispatch, ["research", "join_model", "respond_directly"])
    builder.add_edge("research", "reflect")
    builder.add_edge("join_model", "reflect")
    builder.add_conditional_edges("reflect", follow_up, ["research", "join_model", "synthesize"])
    builder.add_edge("synthesize", END)
    builder.add_edge("respond_directly", END)
    return builder.compile(name="confer-research")
