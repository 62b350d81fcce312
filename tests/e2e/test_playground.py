"""End to end in the real Microsoft 365 Agents Playground, driven by headless Chromium.

Confer runs in-process in Teams local mode (with slowed collections, so the status card visibly
changes); the Playground (npm, pinned in deploy/teams/node) talks to it over HTTP; Playwright
types a question like a person and reads what the page shows. Screenshots are kept in
``test-artifacts/playground/``. ``.ci/run`` installs Node packages and Chromium when missing; without
them the test skips and says why.
"""

import asyncio
import contextlib
import os
import re
import shutil
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.server import ConferServer, build_server
from bot.settings import load_settings
from tests.fakes.backends import FaultyBackend
from tests.integration.conftest import index_samples

ROOT = Path(__file__).resolve().parents[2]
PLAYGROUND = ROOT / "deploy/teams/node/node_modules/@microsoft/m365agentsplayground/cli.js"
ARTIFACTS = Path(os.environ.get("CONFER_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "playground"
QUESTION = "How do the engineering and security policies differ on production access?"


def _chromium() -> str | None:
    for name in (os.environ.get("CONFER_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    return None


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "Node.js is not installed"
    if not PLAYGROUND.exists():
        return f"the Agents Playground is not installed (npm ci --prefix {PLAYGROUND.parents[3]})"
    if _chromium() is None:
        return "Chromium is not installed (apt-get install chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def _confer(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConferServer]:
    monkeypatch.setenv("CONFER_TEAMS_LOCAL", "true")
    monkeypatch.setenv("CONFER_COLLECTIONS", str(sample_dir / "collections.yaml"))
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    monkeypatch.setenv("CONFER_SHUTDOWN_GRACE_SECONDS", "5")
    backend = FaultyBackend(await index_samples(sample_dir), delays={"engineering": 0.8, "security": 3.0})
    server = build_server(load_settings(env_file=None), status_interval=0.2, backend=backend)
    server.port = 0
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def _playground(confer_port: int, tmp_path: Path) -> AsyncIterator[str]:
    noop = tmp_path / "bin"
    noop.mkdir()
    opener = noop / "xdg-open"
    opener.write_text("#!/bin/sh\nexit 0\n")
    opener.chmod(opener.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{noop}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = await asyncio.create_subprocess_exec(
        "node",
        str(PLAYGROUND),
        "-e",
        f"http://127.0.0.1:{confer_port}/api/messages",
        "-c",
        "msteams",
        "-p",
        str(_free_port()),
        "--dt",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=tmp_path,  # it writes devTools/ logs into its working directory
    )
    assert process.stdout is not None
    try:
        port = None
        async with asyncio.timeout(60):
            while port is None:
                line = (await process.stdout.readline()).decode(errors="replace")
                if not line:
                    raise AssertionError("the Playground exited before it listened")
                if match := re.search(r"Listening on (\d+)", line):
                    port = int(match.group(1))
        drain = asyncio.create_task(process.stdout.read())  # keep its pipe from filling up
        yield f"http://127.0.0.1:{port}"
        drain.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_question_in_the_playground_shows_a_live_status_card_then_a_cited_answer(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reason = _missing()
    if reason:
        pytest.skip(f"Agents Playground end-to-end test skipped: {reason}")
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with (
        _confer(sample_dir, monkeypatch) as server,
        _playground(server.port, tmp_path) as url,
        async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1000})
            await page.goto(url)
            composer = page.locator("[data-lexical-editor=true]")
            await composer.click(timeout=30_000)
            await page.keyboard.type(QUESTION)
            await page.keyboard.press("Enter")
            # The status card while collections finish: engineering done, security still searching.
            researching = page.get_by_text(re.compile(r"Engineering handbook: done, \d+ sources?"))
            await expect(researching).to_be_visible(timeout=30_000)
            await expect(page.get_by_text("Security policy: searching…")).to_be_visible()
            await page.screenshot(path=str(ARTIFACTS / "1-status-card.png"))
            # Then the answer with [n] citations and its Sources, and the status card's summary.
            await expect(page.get_by_text("Sources", exact=True)).to_be_visible(timeout=30_000)
            await expect(page.get_by_text(re.compile(r"Done in [\d.]+ s · 2 collections"))).to_be_visible()
            await expect(page.get_by_text("Security policy: searching…")).to_have_count(0)
            shown = await page.locator("body").inner_text()
            markers = {int(n) for n in re.findall(r"\[(\d+)\]", shown)}
            listed = {int(n) for n in re.findall(r"^\[(\d+)\] ", shown, re.MULTILINE)}
            assert listed and markers == listed, shown
            assert "Engineering handbook" in shown and "Security policy" in shown
            await page.screenshot(path=str(ARTIFACTS / "2-answer.png"), full_page=True)
            # A feedback button is counted.
            await page.get_by_role("button", name=re.compile("Helpful")).first.click()
            # The Playground's log panel lists each activity it sent with Confer's status code.
            await expect(page.get_by_text("message 202", exact=True)).to_have_count(2, timeout=20_000)
            registry = server.metrics.registry
            assert registry.get_sample_value("confer_feedback_total", {"vote": "up"}) == 1.0
        finally:
            await browser.close()
