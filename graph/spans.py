"""OpenTelemetry spans for one question's research: each graph node, each branch and each model
call (GenAI semantic conventions). Only the OpenTelemetry API is used here: with no SDK tracer
provider configured (``bot.telemetry`` configures one only when OTLP is), every span is the API's
non-recording span and costs next to nothing. Search spans are the caller's (``bot/``), which
wraps the search backend."""

import functools
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import trace

F = TypeVar("F", bound=Callable[..., Any])

_tracer = trace.get_tracer("confer.graph")


def traced_node(name: str, node: F) -> F:
    """``node`` run inside a span ``node <name>`` (LangGraph reads the original signature)."""

    @functools.wraps(node)
    async def run(*args: Any, **kwargs: Any) -> Any:
        with _tracer.start_as_current_span(f"node {name}", attributes={"langgraph.node": name}):
            return await node(*args, **kwargs)

    assert inspect.iscoroutinefunction(node), name
    return run  # type: ignore[return-value]


@contextmanager
def branch_span(collection: str, round_: int, entity: str) -> Iterator[trace.Span]:
    """One research branch: its collection, round and (a follow-up's) entity."""
    attributes: dict[str, str | int] = {"confer.collection": collection, "confer.round": round_}
    if entity:
        attributes["confer.entity"] = entity
    with _tracer.start_as_current_span(f"branch {collection}", attributes=attributes) as span:
        yield span


def model_call_span(
    *,
    model: str,
    purpose: str,
    outcome: str,
    seconds: float,
    prompt_tokens: int,
    completion_tokens: int,
) -> None:
    """One model request, as a span that started ``seconds`` ago and ends now (the client reports a
    request when it is over), with the GenAI semantic conventions' attributes."""
    end = time.time_ns()
    span = _tracer.start_span(
        f"chat {model}",
        kind=trace.SpanKind.CLIENT,
        start_time=end - int(seconds * 1e9),
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": prompt_tokens,
            "gen_ai.usage.output_tokens": completion_tokens,
            "confer.purpose": purpose,
            "confer.outcome": outcome,
        },
    )
    if outcome != "ok":
        span.set_attribute("error.type", outcome)
        span.set_status(trace.StatusCode.ERROR)
    span.end(end_time=end)


def trace_id() -> str:
    """The current trace's id (32 hex digits), or ``""`` outside a recorded trace."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""
