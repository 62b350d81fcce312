"""What tracing costs an extractive question, on the sample collections (answer cache off,
embeddings on), in one process that asks the sample questions in every mode, one block of them
after another, the modes' order rotating each round:

- ``off``: as without tracing: no tracer provider (the OpenTelemetry API's no-op spans, as
  without ``OTEL_EXPORTER_OTLP_ENDPOINT``), and a trace recorder that records nothing, no trace
  built, no decision read, no sentence listed as passed over, nothing stored;
- ``trace``: the stored trace only (as with OTLP unset): recorded, built and kept in a SQLite
  feedback store as a chat answer's is (``FeedbackStore.keep_trace``);
- ``on``: the stored trace and every span exported over OTLP/HTTP by the SDK's batch processor
  and Confer's exporter (``bot.telemetry.span_exporter``, as the service has them) to a receiver
  in another process
  (``tests/fakes/otlp.py``), the block's spans flushed before its CPU is read (one batch for the
  block, as a service answering about a question a second sends them);
- ``alone``: the same, each question's spans flushed on their own (a lightly loaded service);
- ``sampled``: the stored trace, spans exported for ``SAMPLED`` of the questions
  (``OTEL_TRACES_SAMPLER=parentbased_traceidratio``).

Two measures: process CPU (``time.process_time``: every thread, the exporter's and SQLite's too),
whose figure is the median over the rounds of each block's CPU against the ``off`` block of the
same round, on a shared machine still noisy; and instructions counted by ``valgrind
--tool=callgrind`` (``--callgrind``; each block dumped on its own after an uninstrumented warm-up),
which the machine's load does not move. A tracer provider cannot be unset in a process: every mode
goes through a provider that hands each span to the mode's tracer (one call more per span in every
mode). ``python -m bench.tracing [--callgrind]`` runs it alone."""

import asyncio
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry import trace

from bench.answer_cache import QUESTIONS, ROOT, indexed_samples
from bot.chat.feedback import asker_id, build_feedback_store
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from bot.telemetry import span_exporter
from graph import Question
from graph.context import ResearchLimits

ROUNDS = 40
CALLGRIND_ROUNDS = 2  # counted instructions barely move between rounds
MODES = ("off", "trace", "on", "alone", "sampled")
SAMPLED = 0.1  # "sampled": OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.1


class _SwitchTracer(trace.Tracer):
    """The tracer of the mode the switch is in: an SDK provider's, or the API's no-op tracer."""

    def __init__(self, switch: "_Switch", tracers: dict[str, trace.Tracer]) -> None:
        self._switch, self._tracers, self._noop = switch, tracers, trace.NoOpTracer()

    def _current(self) -> trace.Tracer:
        return self._tracers.get(self._switch.mode, self._noop)

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._current().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._current().start_as_current_span(*args, **kwargs)


class _Switch(trace.TracerProvider):
    def __init__(self, providers: dict[str, Any]) -> None:
        self.providers, self.mode = providers, "off"

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        tracers = {mode: provider.get_tracer(*args, **kwargs) for mode, provider in self.providers.items()}
        return _SwitchTracer(self, tracers)


def _providers() -> tuple[dict[str, Any], Any]:
    """The SDK's providers as ``bot.telemetry`` configures them (a batch processor, Confer's
    OTLP/HTTP exporter): one exporting every span, one sampling ``SAMPLED`` of the questions; and a
    count of the questions the second one sampled."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    class Roots(SpanProcessor):
        sampled = 0

        def on_end(self, span: ReadableSpan) -> None:
            self.sampled += span.parent is None

    every = TracerProvider()
    every.add_span_processor(BatchSpanProcessor(span_exporter()))
    sampled = TracerProvider(sampler=ParentBased(TraceIdRatioBased(SAMPLED)))
    sampled.add_span_processor(BatchSpanProcessor(span_exporter()))
    roots = Roots()
    sampled.add_span_processor(roots)
    return {"on": every, "alone": every, "sampled": sampled}, roots


def _without_trace() -> dict[tuple[Any, str], Any]:
    """What the graph does without its trace, by module attribute: a recorder that records
    nothing, no trace built, no decision read, nothing listed as passed over."""
    import graph.answer.synthesis
    import graph.nodes
    import graph.runner
    from graph.trace import TraceRecorder

    class NullRecorder(TraceRecorder):
        def plan(self, *args: Any, **kwargs: Any) -> None: ...
        def added(self, *args: Any, **kwargs: Any) -> None: ...
        def branch(self, *args: Any, **kwargs: Any) -> None: ...
        def elsewhere(self, *args: Any, **kwargs: Any) -> None: ...
        def follow_ups(self, *args: Any, **kwargs: Any) -> None: ...
        def model_call(self, *args: Any, **kwargs: Any) -> None: ...
        def drop(self, *args: Any, **kwargs: Any) -> None: ...

    class NoTrace:
        def model_copy(self, **_: Any) -> None:
            return None

    def no_trace(*_: Any) -> NoTrace:
        return NoTrace()

    def same(answer: Any) -> Any:
        return answer

    def nothing(*_: Any, **__: Any) -> tuple[()]:
        return ()

    return {
        (graph.runner, "TraceRecorder"): NullRecorder,
        (graph.runner, "trace_of"): no_trace,
        (graph.nodes, "decided"): same,
        (graph.answer.synthesis, "passed_over"): nothing,
    }


@contextmanager
def _patched(attributes: dict[tuple[Any, str], Any]) -> Iterator[None]:
    saved = {key: getattr(*key) for key in attributes}
    for (module, name), value in attributes.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


# The receiver runs in a process of its own, so that its parsing is not counted as Confer's CPU.
_RECEIVER = """
import asyncio, sys
from tests.fakes.otlp import FakeOtlpReceiver

async def main():
    receiver = await FakeOtlpReceiver().start()
    print(receiver.url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(len(receiver.spans), flush=True)
    await receiver.stop()

asyncio.run(main())
"""


async def measure_tracing(rounds: int = ROUNDS) -> dict[str, Any]:
    """Process CPU: every sample question ``rounds`` times in each mode, in a new process (this
    one may have a tracer provider already, or other benchmarks after it)."""
    run = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.tracing", "--rounds", str(rounds), "--child",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await run.communicate()
    measured = json.loads(out)
    return _summary(measured["samples"], measured, rounds, unit="cpu_ms", scale=1000)


async def measure_instructions(rounds: int = CALLGRIND_ROUNDS) -> dict[str, Any]:
    """Instructions executed (``valgrind --tool=callgrind``, every thread of the process), the same
    questions in each mode: counted, not timed, so the machine's load does not move them. The
    process runs uninstrumented until its warm-up is over; each round's block of questions is then
    counted on its own (``callgrind_control --dump``)."""
    with tempfile.TemporaryDirectory() as out:
        run = await asyncio.create_subprocess_exec(
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.out",
            sys.executable, "-m", "bench.tracing", "--rounds", str(rounds), "--child", "--callgrind",
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        printed, _ = await run.communicate()
        counted = await asyncio.to_thread(_read_dumps, Path(out))
    return _summary(counted, json.loads(printed), rounds, unit="million_instructions", scale=1e-6)


def _read_dumps(folder: Path) -> dict[str, list[float]]:
    """Each block's instruction count, by mode, from callgrind's dumps (in the order written)."""
    counted: dict[str, list[float]] = {mode: [] for mode in MODES}
    for dump in sorted(folder.glob("cg.out.*"), key=lambda path: int(path.suffix[1:])):
        text = dump.read_text()
        label = re.search(r"^desc: Trigger: dump (\w+)", text, re.MULTILINE)
        totals = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if label and totals and label.group(1) in counted:
            counted[label.group(1)].append(float(totals.group(1)))
    return counted


def _summary(
    samples: dict[str, list[float]], child: dict[str, Any], rounds: int, *, unit: str, scale: float
) -> dict[str, Any]:
    """Per question in each mode (a round's block of questions is one sample: its median over the
    rounds), and the median over the rounds of each mode's block against the block without tracing
    in the same round."""

    def ratios(mode: str) -> list[float]:
        return [a / b for a, b in zip(samples[mode], samples["off"], strict=True)]

    on = ratios("on")
    return {
        "unit": unit,
        "questions": len(QUESTIONS),
        "rounds": rounds,
        **{f"{mode}": round(statistics.median(samples[mode]) / len(QUESTIONS) * scale, 2) for mode in MODES},
        **{f"{mode}_to_off": round(statistics.median(ratios(mode)), 3) for mode in MODES[1:]},
        "on_to_off_range": [round(min(on), 3), round(max(on), 3)],
        "on_to_trace": round(
            statistics.median(a / b for a, b in zip(samples["on"], samples["trace"], strict=True)), 3
        ),
        "spans_received": child["spans"],
        "sampled_questions": child["sampled"],
        "questions_asked": rounds * len(QUESTIONS),
    }


async def _measure_here(rounds: int, *, callgrind: bool) -> dict[str, Any]:
    pipe = asyncio.subprocess.PIPE
    receiver = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RECEIVER, cwd=ROOT, stdin=pipe, stdout=pipe
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    url = (await receiver.stdout.readline()).decode().strip()
    try:
        samples, sampled = await _measure(url, rounds, _callgrind if callgrind else None)
    finally:
        receiver.stdin.close()
        received = int((await receiver.stdout.readline()).decode().strip() or 0)
        await receiver.wait()
    return {"samples": samples, "spans": received, "sampled": sampled}


def _callgrind(command: str) -> None:
    """Tell the callgrind this process runs under to start counting, or to write what a block
    counted (and start again from zero)."""
    option = "--instr=on" if command == "start" else f"--dump={command}"
    subprocess.run(["callgrind_control", option, str(os.getpid())], check=True, capture_output=True)


async def _measure(
    url: str, rounds: int, mark: Callable[[str], None] | None
) -> tuple[dict[str, list[float]], int]:
    """Each round: the sample questions in each mode (the modes' order rotating), each mode's CPU
    for all of them one sample; ``mark`` is told when the warm-up is over and each block's mode.
    Also how many questions the sampling provider sampled."""
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    providers, roots = _providers()
    switch = _Switch(providers)
    trace.set_tracer_provider(switch)
    without = _without_trace()
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        config, backend = await indexed_samples(Path(tmp))
        store = await build_feedback_store(data_dir=Path(tmp), database_url=None, ttl_days=30)
        service = ResearchService(
            config=config,
            backend=backend,
            metrics=build_metrics(),
            limits=ResearchLimits(),
            question_timeout=600,  # counted under valgrind, fifty times slower
        )
        allowed = tuple(c.name for c in config.collections)
        questions = [Question(text=text, allowed=allowed) for text in QUESTIONS]

        async def flush(mode: str) -> None:
            await asyncio.to_thread(providers[mode].force_flush)

        async def ask_all(mode: str) -> float:
            switch.mode = mode
            started = time.process_time()
            with _patched(without if mode == "off" else {}):
                for question in questions:
                    answer = await service.answer(question, surface="cli")
                    if answer.trace is not None:  # kept as a chat answer's trace is
                        question_id = uuid.uuid4().hex[:16]
                        asker = asker_id(question_id, "bench", "U1")
                        await store.keep_trace(question_id, answer.trace, asker=asker)
                    if mode == "alone":
                        await flush(mode)
            if mode in ("on", "sampled"):
                await flush(mode)
            return time.process_time() - started

        for mode in MODES:  # warm-up: the embedder, the text caches, SQLite, the exporter
            await ask_all(mode)
        gc.collect()  # the heap settled as ``confer serve`` settles it after start-up
        gc.freeze()
        random.seed(0)  # the spans' ids, so which questions are sampled is the same every run
        sampled_before = roots.sampled
        if mark is not None:
            mark("start")
        for round_ in range(rounds):
            turn = round_ % len(MODES)
            for mode in MODES[turn:] + MODES[:turn]:
                cpu[mode].append(await ask_all(mode))
                if mark is not None:
                    mark(mode)
        await store.close()
        await backend.close()
    for provider in providers.values():
        provider.shutdown()
    return cpu, roots.sampled - sampled_before


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "## Tracing: CPU per extractive question, on against off",
        "",
        f"{len(QUESTIONS)} sample questions asked in every mode, one block of them after another, in one "
        "process (answer cache off): without tracing (no-op spans, nothing recorded); with the stored "
        "trace only (as with OTLP unset); with the stored trace and every span exported over OTLP/HTTP "
        "to a receiver in another process, a block's spans in one batch; the same with each question's "
        f"spans sent on their own (a lightly loaded service); and with {SAMPLED:.0%} of the questions "
        "sampled (`parentbased_traceidratio`). Per question, and the median over the rounds of each "
        "block against the block without tracing in the same round:",
        "",
    ]
    for measured in (result.get("cpu"), result.get("instructions")):
        if not measured:
            continue
        unit = "process CPU (ms)" if measured["unit"] == "cpu_ms" else "instructions (millions, callgrind)"
        lines += [
            f"{unit}, {measured['rounds']} rounds, {measured['spans_received']} spans received, "
            f"{measured['sampled_questions']} of {measured['questions_asked']} questions sampled; on ÷ off "
            f"from {measured['on_to_off_range'][0]} to {measured['on_to_off_range'][1]}, on ÷ stored "
            f"trace {measured['on_to_trace']}:",
            "",
            "| off | stored trace | + OTLP | + OTLP, alone | + OTLP, sampled | stored ÷ off | **on ÷ off** "
            "| alone ÷ off | sampled ÷ off |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {measured['off']} | {measured['trace']} | {measured['on']} | {measured['alone']} "
            f"| {measured['sampled']} | {measured['trace_to_off']} | **{measured['on_to_off']}** "
            f"| {measured['alone_to_off']} | {measured['sampled_to_off']} |",
            "",
        ]
    return lines


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--child", action="store_true", help="measure in this process (raw samples)")
    args = parser.parse_args()
    if args.child:
        rounds = args.rounds or (CALLGRIND_ROUNDS if args.callgrind else ROUNDS)
        print(json.dumps(asyncio.run(_measure_here(rounds, callgrind=args.callgrind))))
    else:
        found: dict[str, Any] = {}
        if args.callgrind:
            found["instructions"] = asyncio.run(measure_instructions(args.rounds or CALLGRIND_ROUNDS))
        else:
            found["cpu"] = asyncio.run(measure_tracing(args.rounds or ROUNDS))
        print(json.dumps(found, indent=2))
        print("\n".join(markdown(found)))
