"""Start-up times of the command line, as a person sees them: a new process each run, from launch
until it exits (or, for ``confer serve``, until ``/healthz`` answers), median of several runs."""

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientError, ClientSession

from tests.fakes.slack_api import FakeSlackApi

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How long is parental leave?"


def _timed(args: list[str], kb: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bot", *args], cwd=kb, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


async def _serve_until_healthy(kb: Path, env: dict[str, str]) -> float:
    fake = await FakeSlackApi().start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve_env = {
        **env,
        "PORT": str(port),
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": "bench-signing-secret",
        "SLACK_API_URL": fake.url,
    }
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        cwd=kb,
        env=serve_env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with ClientSession() as http:
            while True:
                try:
                    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                        if response.status == 200:
                            return time.perf_counter() - started
                except ClientError:
                    pass
                if process.returncode is not None:
                    raise RuntimeError("confer serve exited during start-up")
                await asyncio.sleep(0.01)
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
        await fake.stop()


async def measure_startup(runs: int = 5) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        shutil.copytree(ROOT / "samples", kb / "samples")
        shutil.copy(ROOT / "collections.yaml", kb / "collections.yaml")
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CONFER_", "SLACK_", "LLM_", "ELASTICSEARCH_"))
        }
        env |= {"PYTHONPATH": str(ROOT), "CONFER_DATA_DIR": str(kb / ".confer")}
        _timed(["index"], kb, env)
        commands = {
            "help": ["--help"],
            "collections": ["collections"],
            "ask": ["ask", QUESTION, "--json"],
        }
        result: dict[str, Any] = {"runs": runs}
        for name, args in commands.items():
            _timed(args, kb, env)  # the first run also writes bytecode; not counted
            result[f"{name}_seconds"] = round(
                statistics.median(_timed(args, kb, env) for _ in range(runs)), 3
            )
        healthy = [await _serve_until_healthy(kb, env) for _ in range(runs)]
        result["serve_until_healthz_seconds"] = round(statistics.median(healthy), 3)
    return result


if __name__ == "__main__":  # `python -m bench.startup`: this benchmark alone
    print(asyncio.run(measure_startup()))
