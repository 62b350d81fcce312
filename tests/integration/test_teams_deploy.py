"""The Teams app package: manifest valid against Microsoft's own schema (npm ``@microsoft/app-manifest``,
pinned in deploy/teams/node), icons as Teams requires them, and the packaging script."""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

TEAMS = ROOT / "deploy/teams"
SCHEMAS = TEAMS / "node/node_modules/@microsoft/app-manifest/build/json-schemas/teams"


def _manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((TEAMS / "manifest.json").read_text())
    return manifest


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_manifest_is_valid_against_microsofts_schema() -> None:
    manifest = _manifest()
    schema_file = SCHEMAS / f"v{manifest['manifestVersion']}/MicrosoftTeams.schema.json"
    if not schema_file.exists():
        pytest.skip("Microsoft's manifest schemas are not installed (npm ci --prefix deploy/teams/node)")
    checker = str(Path(sys.executable).with_name("check-jsonschema"))
    result = subprocess.run(
        [checker, "--schemafile", str(schema_file), str(TEAMS / "manifest.json")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_manifest_offers_the_bot_in_every_scope_with_the_commands_confer_understands() -> None:
    manifest = _manifest()
    [bot] = manifest["bots"]
    assert set(bot["scopes"]) == {"personal", "team", "groupChat"}
    assert bot["botId"] == manifest["id"]
    commands = {c["title"] for lst in bot["commandLists"] for c in lst["commands"]}
    assert commands == {"help", "list"}
    assert manifest["description"]["short"] and len(manifest["description"]["short"]) <= 80


def test_icons_have_the_sizes_and_colours_teams_requires() -> None:
    from PIL import Image

    icons = _manifest()["icons"]
    assert _png_size(TEAMS / icons["color"]) == (192, 192)
    assert _png_size(TEAMS / icons["outline"]) == (32, 32)
    with Image.open(TEAMS / icons["outline"]) as outline:
        raw = outline.convert("RGBA").tobytes()
    pixels = [tuple(raw[i : i + 4]) for i in range(0, len(raw), 4)]
    # The outline icon is white on a transparent background.
    assert all(a == 0 or (r, g, b) == (255, 255, 255) for r, g, b, a in pixels)
    assert any(a == 0 for *_, a in pixels) and any(a == 255 for *_, a in pixels)


def test_package_script_writes_the_app_id_into_the_package(tmp_path: Path) -> None:
    app_id = "11111111-2222-3333-4444-555555555555"
    out = tmp_path / "confer.zip"
    subprocess.run(["bash", str(TEAMS / "package.sh"), app_id, str(out)], check=True, capture_output=True)
    with zipfile.ZipFile(out) as package:
        assert sorted(package.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(package.read("manifest.json"))
    assert manifest["id"] == app_id and manifest["bots"][0]["botId"] == app_id
    refused = subprocess.run(["bash", str(TEAMS / "package.sh"), "not-a-guid", str(out)], capture_output=True)
    assert refused.returncode == 2


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# A terminal starts its foreground job with Ctrl-C's default action, whatever the terminal's own
# process had: pytest started as a background job of a shell without job control (a CI step's
# `cmd &`) ignores SIGINT, and make and bash would inherit that (bash cannot even trap a signal
# ignored on entry), so Ctrl-C would never reach the script's clean-up.
AS_A_TERMINAL = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])",
]


def _start_playground(tmp_path: Path) -> tuple["subprocess.Popen[str]", list[str]]:
    """``make playground`` in a process group of its own, as a terminal's foreground job, until it
    says Confer is ready. A stand-in prints the Playground's start line and waits."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (
        ("node", "exit 0"),
        ("npm", "exit 0"),
        ("agentsplayground", 'echo "Listening on 56150"; exec sleep 300'),
    ):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    # Only the machine's basics: configuration other tests of this process left in its environment
    # (a Slack fake's address, a store, a time-out) is not the embedded defaults this runs on.
    basics = ("HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "PYTHONPATH")
    env = {
        **{name: os.environ[name] for name in basics if name in os.environ},
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "AGENTSPLAYGROUND": str(bin_dir / "agentsplayground"),
        "PORT": str(_free_port()),
        "CONFER_DATA_DIR": str(tmp_path / "data"),
    }
    process = subprocess.Popen(
        [*AS_A_TERMINAL, "make", "--no-print-directory", "playground"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job has
    )
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    for line in process.stdout:
        lines.append(line)
        if "Confer is ready" in line or time.monotonic() > deadline:
            break
    if not any("Confer is ready" in line for line in lines):
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError("".join(lines) + process.communicate()[0])
    return process, lines


def _end(process: "subprocess.Popen[str]", lines: list[str]) -> str:
    """Everything make playground wrote, once it ended (within 60 s: else the group is killed and the
    test fails with what it wrote)."""
    try:
        rest, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        rest, _ = process.communicate()
        raise AssertionError("make playground did not end within 60 s:\n" + "".join(lines) + rest) from None
    return "".join(lines) + rest


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_playground_stops_quietly_on_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole foreground process group (make, the script, Confer, the Playground):
    both servers stop and make reports no error."""
    process, lines = _start_playground(tmp_path)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does
    output = _end(process, lines)
    assert "Error" not in output and "***" not in output, output
    assert "Traceback" not in output, output
    assert process.returncode in (0, -signal.SIGINT), output  # make itself may end by the signal
    with pytest.raises(ProcessLookupError):  # nothing of the group is left running
        os.killpg(process.pid, 0)


@pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("pgrep") is None, reason="needs make and pgrep"
)
def test_make_playground_ends_when_confer_stops_on_its_own(tmp_path: Path) -> None:
    """Confer ending without Ctrl-C (here killed, as a crash would end it) ends make playground with
    an error that says so, and stops the Playground: it never stays up with nothing behind it."""
    process, lines = _start_playground(tmp_path)
    found = subprocess.run(
        ["pgrep", "-g", str(process.pid), "-f", "bin/confer serve"], capture_output=True, text=True
    )
    [confer] = found.stdout.split()
    os.kill(int(confer), signal.SIGKILL)
    output = _end(process, lines)
    assert "confer serve stopped (status 137, see above); the Playground is stopped too." in output, output
    assert process.returncode == 2, output  # make: the recipe failed
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)
