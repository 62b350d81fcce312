"""OpenTelemetry export: spans go over OTLP (HTTP, protobuf) when ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, with the SDK's own environment variables
(``OTEL_SERVICE_NAME``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_RESOURCE_ATTRIBUTES``, …); nothing is
created otherwise, and the spans the code starts are the API's non-recording ones.

One trace per question: ``question`` (a chat question's whole life) with ``intake`` (reading the
thread, a follow-up's rewrite), ``research`` (the graph: a span per node, per branch, per search
and per model call) and ``delivery`` (posting the answer); ``confer ask`` starts at ``research``.
"""

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

tracer = trace.get_tracer("confer.bot")


def configure_tracing() -> "TracerProvider | None":
    """The process's tracer provider exporting over OTLP, when an endpoint is set; ``None`` (and no
    exporter, no SDK loaded) otherwise. The caller shuts it down at exit (the last spans are sent)."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "confer"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # its endpoint from the environment
    trace.set_tracer_provider(provider)
    logger.info("exporting OpenTelemetry spans over OTLP")
    return provider


@contextmanager
def span(name: str, **attributes: str | int | bool) -> Iterator[trace.Span]:
    """A span of the question's trace (a no-op when nothing exports)."""
    with tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def current_trace_id() -> str:
    """The current trace's id for log lines, or ``""`` outside a recorded trace."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""
