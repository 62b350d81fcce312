"""OpenTelemetry export: spans go over OTLP (HTTP, protobuf) when ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, with the SDK's own environment variables
(``OTEL_SERVICE_NAME``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_RESOURCE_ATTRIBUTES``, …); nothing is
created otherwise, and the spans the code starts are the API's non-recording ones.

One trace per question: ``question`` (a chat question's whole life) with ``intake`` (reading the
thread, a follow-up's rewrite), ``research`` (the graph: a span per node, per branch, per search
and per model call) and ``delivery`` (posting the answer); ``confer ask`` starts at ``research``.

The exporter is the SDK's with two changes that cut what exporting a span costs (``python -m
bench.tracing --callgrind``): a batch's protobuf is written here (``encode_spans``), the same bytes
as the SDK's encoder at under a quarter of its instructions (it builds a protobuf object for every
span, attribute and value, and hashes the resource as JSON for every span); and its ``requests``
session reads the environment's proxy settings once, not on every request.
"""

import logging
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

tracer = trace.get_tracer("confer.bot")


def configure_tracing() -> "TracerProvider | None":
    """The process's tracer provider exporting over OTLP, when an endpoint is set; ``None`` (and no
    exporter, no SDK loaded) otherwise. The caller shuts it down at exit (the last spans are sent)."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "confer"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(span_exporter()))  # its endpoint from the environment
    trace.set_tracer_provider(provider)
    logger.info("exporting OpenTelemetry spans over OTLP")
    return provider


def span_exporter() -> "SpanExporter":
    """The SDK's OTLP/HTTP exporter (endpoint, headers, TLS, timeout, compression, retries and its
    own metrics as the standard variables set them), a batch encoded by ``encode_spans`` and posted
    through a ``requests`` session that reads the environment once (``_session``)."""
    from opentelemetry.exporter.otlp.proto.http._common import (
        RequestPayloadTooLargeError,
        _is_request_too_large,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.semconv.attributes.http_attributes import HTTP_RESPONSE_STATUS_CODE

    class Exporter(OTLPSpanExporter):
        # ``OTLPSpanExporter.export`` (opentelemetry-exporter-otlp-proto-http 1.45, pinned) with
        # ``encode_spans`` in place of the SDK's encoder.
        def export(self, spans: Sequence["ReadableSpan"]) -> SpanExportResult:
            if self._shutdown:
                return super().export(spans)  # warns, fails
            with self._metrics.export_operation(len(spans)) as result:
                try:
                    data = encode_spans(spans)
                except Exception as error:
                    logger.error("failed to encode a span batch: %s", error)
                    result.error = error
                    return SpanExportResult.FAILURE
                if _is_request_too_large(data, self._max_request_size):
                    logger.warning(
                        "dropping a span batch: %d bytes serialized, over max_request_size %d bytes",
                        len(data),
                        self._max_request_size,
                    )
                    result.error = RequestPayloadTooLargeError(
                        f"Serialized span request size {len(data)} bytes exceeds max_request_size "
                        f"{self._max_request_size} bytes."
                    )
                    return SpanExportResult.FAILURE
                sent = self._client.export(data)
                if not sent.success:
                    result.error = sent.error
                    result.error_attrs = (
                        {HTTP_RESPONSE_STATUS_CODE: sent.status_code}
                        if sent.status_code is not None
                        else None
                    )
                    return SpanExportResult.FAILURE
            return SpanExportResult.SUCCESS

    return Exporter(session=_session())


# The exporter's session comes from a credential provider's entry point when one is named.
_CREDENTIAL_PROVIDERS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)


def _session() -> Any:
    """A ``requests`` session that reads the environment's proxies and CA bundle for a URL once:
    ``requests`` reads them on every request, walking every environment variable twice, about 40 %
    of an export request's instructions. ``None`` when a credential provider makes the session."""
    if any(os.environ.get(name) for name in _CREDENTIAL_PROVIDERS):
        return None
    import requests

    class Session(requests.Session):
        def __init__(self) -> None:
            super().__init__()
            self._environment: dict[tuple[Any, ...], dict[str, Any]] = {}

        def merge_environment_settings(
            self, url: str, proxies: dict[str, str] | None, stream: bool | None, verify: Any, cert: Any
        ) -> dict[str, Any]:
            key = (url, stream, verify, cert, tuple(sorted((proxies or {}).items())))
            if key not in self._environment:
                self._environment[key] = super().merge_environment_settings(
                    url, proxies, stream, verify, cert
                )
            return dict(self._environment[key])

    return Session()


@contextmanager
def span(name: str, **attributes: str | int | bool) -> Iterator[trace.Span]:
    """A span of the question's trace (a no-op when nothing exports)."""
    with tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def current_trace_id() -> str:
    """The current trace's id for log lines, or ``""`` outside a recorded trace."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


# The OTLP trace request in protobuf's wire format (https://protobuf.dev/programming-guides/encoding/,
# opentelemetry/proto/trace/v1/trace.proto): a field is its tag byte, ``number << 3 | wire type``,
# then its value; a string, bytes or message value is its length (a varint) then its bytes.
_BYTE = tuple(bytes((n,)) for n in range(128))
_INT64 = range(-(1 << 63), 1 << 63)
_INTERNAL = trace.SpanKind.INTERNAL
_KIND = {kind: b"\x30" + _BYTE[kind.value + 1] for kind in trace.SpanKind}  # INTERNAL is 1 in OTLP
_FLAGS = b"\x85\x01\x00\x01\x00\x00"  # SpanFlags: HAS_IS_REMOTE (a fixed32)
_REMOTE_FLAGS = b"\x85\x01\x00\x03\x00\x00"  # HAS_IS_REMOTE | IS_REMOTE
_UNSET = b"\x7a\x00"  # an empty Status: code UNSET, no message
_UNSET_CODE = trace.StatusCode.UNSET
# Attributes (key and value) and span names repeat from span to span (a node, a collection, a
# backend): each one's encoded field, kept while there are at most this many.
_KEPT = 4096
_key_values: dict[tuple[str, type, object], bytes] = {}
_names: dict[str, bytes] = {}


def _varint(n: int) -> bytes:
    if n < 128:
        return _BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, value: bytes) -> bytes:
    size = len(value)
    return tag + (_BYTE[size] if size < 128 else _varint(size)) + value


def _key_value(key: str, value: object) -> bytes | None:
    """An attribute's ``KeyValue`` field, or ``None`` for a value the SDK's encoder is left to
    write (bytes, a sequence or mapping, an int beyond int64, a subclass, text with a lone
    surrogate: the SDK drops that attribute)."""
    kind = type(value)
    try:
        if kind is str:
            encoded = _field(b"\x0a", value.encode())  # type: ignore[attr-defined]
        elif kind is bool:
            encoded = b"\x10\x01" if value else b"\x10\x00"
        elif kind is int and value in _INT64:
            encoded = b"\x18" + _varint(value & 0xFFFF_FFFF_FFFF_FFFF)  # type: ignore[operator]
        elif kind is float:
            encoded = b"\x21" + struct.pack("<d", value)
        else:
            return None
        return _field(b"\x4a", _field(b"\x0a", key.encode()) + _field(b"\x12", encoded))
    except UnicodeEncodeError:
        return None


def _attributes(attributes: Mapping[str, object]) -> bytes | None:
    fields = []
    for key in attributes:  # cheaper than .items() of the SDK's mapping
        value = attributes[key]
        kind = type(value)
        if kind is str or kind is bool or kind is int:
            field = _key_values.get((key, kind, value))
            if field is None:
                field = _key_value(key, value)
                if field is None:
                    return None
                if len(field) <= 128:
                    if len(_key_values) >= _KEPT:
                        _key_values.clear()
                    _key_values[(key, kind, value)] = field
        else:
            field = _key_value(key, value)
            if field is None:
                return None
        fields.append(field)
    return b"".join(fields)


def _span(span: "ReadableSpan") -> bytes:
    """A ``Span`` message's bytes."""
    # Events and links are rare (an exception's event): the SDK's encoder writes such a span. (The
    # lengths of ``_events`` and ``_links``: ``events`` and ``links`` copy them under a lock.)
    attributes = None if span._events or span._links else _attributes(span.attributes or {})
    if attributes is None:
        return _sdk_encoded(span)[-1]
    context, parent, status, name = span.get_span_context(), span.parent, span.status, span.name
    kind, start, end = span.kind, span.start_time, span.end_time
    assert context is not None and start is not None and end is not None
    fields = [
        b"\x0a\x10",
        context.trace_id.to_bytes(16, "big"),
        b"\x12\x08",
        context.span_id.to_bytes(8, "big"),
    ]
    if context.trace_state:
        fields.append(_field(b"\x1a", ",".join(f"{k}={v}" for k, v in context.trace_state.items()).encode()))
    if parent is not None:
        fields += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
    encoded_name = _names.get(name)
    if encoded_name is None:
        if len(_names) >= _KEPT:
            _names.clear()
        encoded_name = _names[name] = _field(b"\x2a", name.encode())
    fields += (
        encoded_name,
        b"\x30\x01" if kind is _INTERNAL else _KIND[kind],
        b"\x39",
        start.to_bytes(8, "little"),
        b"\x41",
        end.to_bytes(8, "little"),
        attributes,
    )
    if dropped := span.dropped_attributes:
        fields.append(b"\x50" + _varint(dropped))
    code, description = status.status_code, status.description
    if code is _UNSET_CODE and not description:
        fields.append(_UNSET)
    else:
        message = _field(b"\x12", description.encode()) if description else b""
        fields.append(_field(b"\x7a", message + (b"\x18" + _BYTE[code.value] if code.value else b"")))
    fields.append(_REMOTE_FLAGS if parent is not None and parent.is_remote else _FLAGS)
    return b"".join(fields)


def _sdk_encoded(span: "ReadableSpan") -> tuple[bytes, str, bytes, str, bytes]:
    """The SDK's encoding of ``span`` alone: its resource and schema url, its scope and schema url,
    the span."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as sdk_encode_spans

    [resource_spans] = sdk_encode_spans([span]).resource_spans
    [scope_spans] = resource_spans.scope_spans
    return (
        resource_spans.resource.SerializePartialToString(),
        resource_spans.schema_url,
        scope_spans.scope.SerializePartialToString(),
        scope_spans.schema_url,
        scope_spans.spans[0].SerializePartialToString(),
    )


# The encoded resource and scope of the spans of a (resource, scope) pair (one provider has one
# resource and a scope per tracer), by their identity, each with the objects themselves.
_groups: dict[tuple[int, int], tuple[object, object, tuple[bytes, str], tuple[bytes, str]]] = {}


def encode_spans(spans: Sequence["ReadableSpan"]) -> bytes:
    """An ``ExportTraceServiceRequest``'s bytes, as ``encode_spans(spans).SerializePartialToString()``
    of the SDK's encoder writes them: spans grouped by resource, then by scope, in the order first
    seen."""
    requests: dict[tuple[bytes, str], dict[tuple[bytes, str], list[bytes]]] = {}
    seen: tuple[object, object] = (None, None)
    encoded_spans: list[bytes] = []
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope
        if resource is not seen[0] or scope is not seen[1]:
            group = _groups.get((id(resource), id(scope)))
            if group is None or group[0] is not resource or group[1] is not scope:
                if len(_groups) >= 64:
                    _groups.clear()
                encoded = _sdk_encoded(span)
                group = _groups[(id(resource), id(scope))] = (resource, scope, encoded[0:2], encoded[2:4])
            encoded_spans = requests.setdefault(group[2], {}).setdefault(group[3], [])
            seen = (resource, scope)
        encoded_spans.append(_field(b"\x12", _span(span)))
    resource_spans = []
    for (resource_bytes, resource_schema), scopes in requests.items():
        fields = [_field(b"\x0a", resource_bytes)]
        for (scope_bytes, scope_schema), scope_spans in scopes.items():
            schema = _field(b"\x1a", scope_schema.encode()) if scope_schema else b""
            fields.append(_field(b"\x12", _field(b"\x0a", scope_bytes) + b"".join(scope_spans) + schema))
        if resource_schema:
            fields.append(_field(b"\x1a", resource_schema.encode()))
        resource_spans.append(_field(b"\x0a", b"".join(fields)))
    return b"".join(resource_spans)
