"""OpenTelemetry over OTLP, as an operator sets it up: `confer serve` in its own process with
OTEL_EXPORTER_OTLP_ENDPOINT pointing at an in-process OTLP/HTTP receiver, a question asked through
the fake Slack API with the fake model configured: one trace per question with the spans for intake,
each node, each branch, each search, each model call (GenAI attributes) and delivery, parent and
child as they ran; the trace id in the stored trace and in the log lines. Without the endpoint no
exporter is created."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import ClientError, ClientSession
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.chat.feedback import build_feedback_store
from bot.telemetry import span_exporter
from tests.conftest import ROOT
from tests.fakes.llm_api import FakeLLM
from tests.fakes.otlp import FakeOtlpReceiver, ReceivedSpan
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_client import SignedSlack
from tests.integration.conftest import SIGNING_SECRET, index_samples


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(sample_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFER_", "SLACK_", "LLM_", "OTEL_"))}
    return env | {
        "PYTHONPATH": str(ROOT),
        "CONFER_DATA_DIR": str(sample_dir / ".confer"),
        "CONFER_COLLECTIONS": str(sample_dir / "collections.yaml"),
        "CONFER_LOG_FORMAT": "json",
        "CONFER_SLACK_PROGRESS": "edit",
        **extra,
    }


async def _healthy(port: int, process: asyncio.subprocess.Process) -> None:
    async with ClientSession() as http:
        for _ in range(600):  # each try waits on the server's answer or its refusal, not a timer
            assert process.returncode is None, "confer serve exited"
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    if response.status == 200:
                        return
            except ClientError:
                await asyncio.sleep(0.05)  # the port is not open yet: nothing to wait on but time
        raise AssertionError("confer serve never answered /healthz")


def _children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_id == parent.span_id]


async def test_one_trace_per_question_with_every_span_in_its_place(sample_dir: Path) -> None:
    backend = await index_samples(sample_dir)
    await backend.close()
    receiver = await FakeOtlpReceiver().start()
    slack = await FakeSlackApi().start()
    llm = await FakeLLM().start()
    port = _free_port()
    env = _environment(
        sample_dir,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_BSP_SCHEDULE_DELAY="200",  # the batch processor sends every 200 ms
        PORT=str(port),
        CONFER_HOST="127.0.0.1",
        SLACK_BOT_TOKEN="xoxb-test-token",
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=slack.url,
        LLM_BASE_URL=llm.url,
        LLM_API_KEY="sk-test",
        LLM_MODEL="fake-model",
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        cwd=sample_dir,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await _healthy(port, process)
        async with ClientSession() as http:
            client = SignedSlack(
                url=f"http://127.0.0.1:{port}/slack/events", secret=SIGNING_SECRET, session=http
            )
            await client.mention("How long is parental leave? in:people", ts="1700000001.000100")
            await slack.wait_for(lambda: len(slack.answers()) == 1, within=60)
            answered = slack.answers()
        await receiver.wait_for(lambda: any(s.name == "question" for s in receiver.spans), within=30)
        await receiver.wait_for(lambda: any(s.name == "delivery" for s in receiver.spans), within=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 60)
        await slack.stop()
        await llm.stop()
        await receiver.stop()
    [root] = [s for s in receiver.spans if s.name == "question"]
    spans = [s for s in receiver.spans if s.trace_id == root.trace_id]
    assert root.parent_id == "" and root.service == "confer"
    names = {s.name for s in _children(spans, root)}
    assert {"intake", "research", "delivery"} <= names, names
    [research] = [s for s in spans if s.name == "research"]
    nodes = {s.name for s in _children(spans, research)}
    assert {"node plan", "branch people", "node reflect", "node synthesize"} <= nodes, nodes
    [branch] = [s for s in spans if s.name == "branch people"]  # the research node's span
    assert branch.parent_id == research.span_id and branch.attributes["confer.collection"] == "people"
    searches = [s for s in _children(spans, branch) if s.name == "search"]
    assert searches and all(s.attributes["confer.collection"] == "people" for s in searches)
    assert all(
        s.attributes["confer.hits"] > 0 and s.attributes["confer.backend"] == "embedded" for s in searches
    )
    calls = [s for s in spans if s.name == "chat fake-model"]
    purposes = sorted(s.attributes["confer.purpose"] for s in calls)
    assert (
        "draft" in purposes
        and "plan" in purposes
        and len(calls) >= len(llm.requests) - purposes.count("suggest")
    )
    for call in calls:
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.request.model"] == "fake-model"
        assert (
            call.attributes["gen_ai.usage.input_tokens"] > 0
            and call.attributes["gen_ai.usage.output_tokens"] > 0
        )
    [draft] = [s for s in calls if s.attributes["confer.purpose"] == "draft"]
    assert draft.parent_id == branch.span_id  # the draft runs inside its branch
    # The same trace id in the log lines of that question.
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    finished = [entry for entry in lines if entry.get("event") == "question finished"]
    assert finished and all(entry.get("trace_id") == root.trace_id for entry in finished)
    assert len({s.trace_id for s in receiver.spans if s.name == "question"}) == 1  # one question, one trace
    # ... and in the trace kept with the answer ("How I found this", `confer trace`).
    [answer] = answered
    [button] = [
        e for b in answer["blocks"] if b.get("block_id", "").startswith("trace:") for e in b["elements"]
    ]
    store = await build_feedback_store(data_dir=sample_dir / ".confer", database_url=None, ttl_days=30)
    try:
        kept = await store.trace(button["value"])
    finally:
        await store.close()
    assert kept is not None and kept.trace_id == root.trace_id


def test_without_an_endpoint_no_exporter_is_created(sample_dir: Path) -> None:
    probe = (
        "import sys\n"
        "from bot.telemetry import configure_tracing\n"
        "from opentelemetry import trace\n"
        "assert configure_tracing() is None\n"
        "print(type(trace.get_tracer_provider()).__name__, "
        "any(m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter')) for m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=_environment(sample_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["ProxyTracerProvider", "False"]


async def test_the_exporter_sends_through_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its session reads the proxy settings once, not on every request: each batch still goes the way
    the environment says (the receiver stands in for the proxy; the collector's name resolves nowhere)."""
    receiver = await FakeOtlpReceiver().start()
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector.invalid:4318/v1/traces")
    recorded = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "confer"}))
    provider.add_span_processor(SimpleSpanProcessor(recorded))
    tracer = provider.get_tracer("confer.graph")
    exporter = span_exporter()
    try:
        for batch in ("plan", "reflect"):
            with tracer.start_as_current_span(f"node {batch}", attributes={"langgraph.node": batch}):
                pass
            result = await asyncio.to_thread(exporter.export, recorded.get_finished_spans())
            assert result is SpanExportResult.SUCCESS
            recorded.clear()
    finally:
        exporter.shutdown()
        await receiver.stop()
    assert [(s.name, s.attributes, s.service) for s in receiver.spans] == [
        ("node plan", {"langgraph.node": "plan"}, "confer"),
        ("node reflect", {"langgraph.node": "reflect"}, "confer"),
    ]
