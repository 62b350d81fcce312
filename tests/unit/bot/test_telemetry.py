"""The spans Confer exports are the bytes OpenTelemetry's own encoder writes: whatever a span holds
(every kind, status, attribute type, a remote parent, events, links, dropped attributes), from
several scopes and resources, in a batch large enough for long length prefixes."""

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as sdk_encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    TraceState,
)

from bot.telemetry import encode_spans


def _recorded() -> list[ReadableSpan]:
    finished = InMemorySpanExporter()
    confer = TracerProvider(resource=Resource.create({"service.name": "confer"}, schema_url="https://s/1"))
    other = TracerProvider(
        resource=Resource.create({"service.name": "other", "replicas": 3, "zones": ("a", "b")}),
        span_limits=SpanLimits(max_span_attributes=2),
    )
    for provider in (confer, other):
        provider.add_span_processor(SimpleSpanProcessor(finished))
    graph = confer.get_tracer("confer.graph")
    bot = confer.get_tracer("confer.bot", "1.2", schema_url="https://s/2", attributes={"room": "chat"})
    elsewhere = other.get_tracer("elsewhere")
    remote = trace.set_span_in_context(
        NonRecordingSpan(
            SpanContext(
                trace_id=0xABC,
                span_id=0xDEF,
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
                trace_state=TraceState([("vendor", "x")]),
            )
        )
    )
    values: list[str | bool | int | float] = ["people", "", "ü" * 200, True, False, 0, 1, -7, 2**63 - 1, 2.5]
    with (
        bot.start_as_current_span("question", context=remote, attributes={"confer.surface": "slack"}),
        graph.start_as_current_span("research", attributes={"n": 1}) as research,
    ):
        research.set_attribute("confer.hits", 300)
        for number, value in enumerate(values * 30):
            with graph.start_as_current_span(f"node {number}", attributes={"value": value, "n": True}):
                pass
        for kind in SpanKind:
            graph.start_span(f"chat {kind.name} " + "x" * 150, kind=kind).end()
        with elsewhere.start_as_current_span("elsewhere", attributes={"a": 1, "b": 2, "c": 3.0}):
            pass
        errored = graph.start_span("failed", attributes={"n": 1.0})
        errored.set_status(StatusCode.ERROR, "timeout")
        errored.end()
        fine = graph.start_span("fine")
        fine.set_status(StatusCode.OK)
        fine.end()
        with graph.start_as_current_span("event") as evented:
            evented.add_event("retried", {"attempt": 2})
        graph.start_span("linked", links=[Link(research.get_span_context(), {"why": "x"})]).end()
        for unusual in ((1, 2), ("a", "b"), b"\x00\x01", 2**63, {"k": "v"}, "lone \udc80 surrogate"):
            graph.start_span("unusual", attributes={"value": unusual, "n": 1}).end()
        graph.start_span("unusual", attributes={"key \udc80": "v", "n": 1}).end()
    return list(finished.get_finished_spans())


def test_a_batch_is_written_as_the_sdks_encoder_writes_it() -> None:
    spans = _recorded()
    sdk = sdk_encode_spans(spans).SerializePartialToString()
    assert len(sdk) > 1 << 14  # lengths of three bytes
    assert encode_spans(spans) == sdk
    assert encode_spans(spans) == sdk  # again, with what was kept from the first batch
    request = ExportTraceServiceRequest.FromString(encode_spans(spans))
    assert len(request.resource_spans) == 2
    assert sum(len(scope.spans) for r in request.resource_spans for scope in r.scope_spans) == len(spans)


def test_each_span_alone_and_none() -> None:
    spans = _recorded()
    for span in spans:
        assert encode_spans([span]) == sdk_encode_spans([span]).SerializePartialToString()
    assert encode_spans([]) == sdk_encode_spans([]).SerializePartialToString() == b""
