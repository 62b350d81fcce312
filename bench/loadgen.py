"""The Slack load generator, in its own process so that its work never shares a CPU slice or an
event loop with the server it measures: ``python -m bench.loadgen`` reads one JSON burst on stdin
(``url``, ``secret``, ``requests``: ``[{"body", "retry"}]``), sends every request at the same
instant, each on a new connection as Slack's are, and prints one JSON line: each request's HTTP
status and latency, and when the burst started and ended (``time.monotonic()``, which every process
on the machine shares)."""

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, TCPConnector

from tests.fakes.slack_client import SignedSlack

ROOT = Path(__file__).resolve().parent.parent


async def burst(spec: dict[str, Any]) -> dict[str, Any]:
    connector = TCPConnector(limit=0, force_close=True)  # a new connection per request
    async with ClientSession(connector=connector) as http:
        slack = SignedSlack(url=spec["url"], secret=spec["secret"], session=http)

        async def send(request: dict[str, Any]) -> tuple[int, float]:
            started = time.perf_counter()
            status, _ = await slack.send(request["body"], "application/json", retry_num=request.get("retry"))
            return status, time.perf_counter() - started

        began = time.monotonic()
        results = await asyncio.gather(*(send(r) for r in spec["requests"]))
        ended = time.monotonic()
    return {
        "statuses": [status for status, _ in results],
        "latencies": [seconds for _, seconds in results],
        "began": began,
        "ended": ended,
    }


async def run_burst(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one burst in a fresh ``python -m bench.loadgen`` process (from the bench's event loop)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.loadgen",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    out, _ = await process.communicate(json.dumps(spec).encode())
    if process.returncode != 0:
        raise RuntimeError(f"the load generator failed (exit {process.returncode})")
    result: dict[str, Any] = json.loads(out)
    return result


def main() -> None:
    spec = json.load(sys.stdin)
    sys.stdout.write(json.dumps(asyncio.run(burst(spec))) + "\n")


if __name__ == "__main__":
    main()
