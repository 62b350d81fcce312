"""CPU per extractive question with OpenTelemetry export on against off, in one process on the
sample collections: the same questions researched (the answer cache off), first with no tracer
provider (the API's no-op spans, as without OTEL_EXPORTER_OTLP_ENDPOINT), then with the SDK's
provider exporting every span over OTLP/HTTP to a receiver in another process (``tests/fakes/otlp.py``).
A provider cannot be unset in a process, so "off" runs first, after a warm-up round.
``python -m bench.tracing`` runs it alone."""

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.answer_cache import QUESTIONS, ROOT, indexed_samples
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph import Question
from graph.context import ResearchLimits

ROUNDS = 4
PROCESSES = 3  # pairs of processes, off then on


async def _cpu_per_question(service: ResearchService, questions: list[Question], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        for question in questions:
            started = time.process_time()
            await service.answer(question, surface="cli")
            samples.append(time.process_time() - started)
    return samples


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


async def measure_mode(mode: str, url: str, rounds: int = ROUNDS) -> list[float]:
    """CPU seconds per question, in this process, with export ``on`` (to ``url``) or ``off``."""
    from bot.telemetry import configure_tracing

    with tempfile.TemporaryDirectory() as tmp:
        config, backend = await indexed_samples(Path(tmp))
        provider = None
        if mode == "on":
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
            provider = configure_tracing()
            assert provider is not None
        service = ResearchService(
            config=config,
            backend=backend,
            metrics=build_metrics(),
            limits=ResearchLimits(),
            question_timeout=60,
        )
        allowed = tuple(c.name for c in config.collections)
        questions = [Question(text=text, allowed=allowed) for text in QUESTIONS]
        await _cpu_per_question(service, questions, 1)  # warm-up: embedder, text caches
        samples = await _cpu_per_question(service, questions, rounds)
        if provider is not None:
            await asyncio.to_thread(provider.force_flush)
        await backend.close()
    return samples


async def measure_tracing(processes: int = PROCESSES) -> dict[str, Any]:
    """Off and on alternately, each in a new process (a tracer provider cannot be unset, and the
    shared machine changes speed from minute to minute)."""
    receiver = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RECEIVER,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    url = (await receiver.stdout.readline()).decode().strip()
    medians: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(processes):
        for mode in ("off", "on"):
            run = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.tracing",
                "--mode",
                mode,
                "--url",
                url,
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            out, _ = await run.communicate()
            medians[mode].append(statistics.median(json.loads(out)))
    receiver.stdin.close()
    received = int((await receiver.stdout.readline()).decode().strip() or 0)
    await receiver.wait()
    off, on = statistics.median(medians["off"]), statistics.median(medians["on"])
    return {
        "questions": len(QUESTIONS),
        "samples": ROUNDS * len(QUESTIONS),
        "processes": processes,
        "cpu_ms_off_runs": [round(m * 1000, 2) for m in medians["off"]],
        "cpu_ms_on_runs": [round(m * 1000, 2) for m in medians["on"]],
        "cpu_ms_off": round(off * 1000, 2),
        "cpu_ms_on": round(on * 1000, 2),
        "on_to_off": round(on / off, 3),
        "spans_received": received,
    }


def markdown(result: dict[str, Any]) -> list[str]:
    return [
        "## OpenTelemetry: CPU per extractive question, export on against off",
        "",
        f"{result['questions']} sample questions researched "
        f"{result['samples'] // result['questions']} times each "
        f"(answer cache off) in {result['processes']} pairs of new processes, alternately without a tracer "
        "provider and exporting every span over OTLP/HTTP "
        f"to a receiver in another process ({result['spans_received']} spans received); Confer's process "
        f"CPU per question, the median of the processes' medians (off {result['cpu_ms_off_runs']}, "
        f"on {result['cpu_ms_on_runs']} ms):",
        "",
        "| off (ms) | on (ms) | on ÷ off |",
        "|---:|---:|---:|",
        f"| {result['cpu_ms_off']} | {result['cpu_ms_on']} | {result['on_to_off']} |",
        "",
    ]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("off", "on"))
    parser.add_argument("--url", default="")
    args = parser.parse_args()
    if args.mode:  # one process's samples, for ``measure_tracing``
        print(json.dumps(asyncio.run(measure_mode(args.mode, args.url))))
    else:
        measured = asyncio.run(measure_tracing())
        print(json.dumps(measured, indent=2))
        print("\n".join(markdown(measured)))
