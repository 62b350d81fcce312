"""An OTLP/HTTP trace receiver on 127.0.0.1 for tests and benchmarks: ``POST /v1/traces`` with an
``ExportTraceServiceRequest`` in binary protobuf, answered with an empty
``ExportTraceServiceResponse`` as the OTLP specification says
(https://opentelemetry.io/docs/specs/otlp/#otlphttp-request, #otlphttp-response). It keeps every
span it received, flattened."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.server import serve_locally


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str  # "" for a trace's root
    name: str
    attributes: dict[str, Any]
    service: str


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@dataclass
class FakeOtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> "FakeOtlpReceiver":
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        # https://opentelemetry.io/docs/specs/otlp/#binary-protobuf-encoding: Content-Type
        # application/x-protobuf, the body one serialized ExportTraceServiceRequest.
        if request.content_type != "application/x-protobuf":
            return web.Response(status=415)
        body = ExportTraceServiceRequest.FromString(await request.read())
        for resource in body.resource_spans:
            service = next(
                (_value(a.value) for a in resource.resource.attributes if a.key == "service.name"), ""
            )
            for scope in resource.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            service=str(service),
                        )
                    )
        self._changed.set()
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    async def wait_for(self, condition: Any, within: float = 20.0) -> None:
        """Until ``condition()`` holds, re-checked at each export (no sleeps)."""
        deadline = time.monotonic() + within
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"spans not received in {within} s: {[s.name for s in self.spans]}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue
