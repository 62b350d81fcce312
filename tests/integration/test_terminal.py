"""``confer`` on a real terminal: a pseudo-terminal drives it and pyte (a terminal emulator) draws
what a person would see, after every cursor movement and erase the progress bars make."""

import os
import pty
import select
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from fcntl import ioctl
from pathlib import Path
from termios import TIOCSWINSZ

import pyte

from tests.conftest import ROOT

COLUMNS, ROWS = 120, 60
WAIT = 90.0  # seconds before a test gives up on a screen (a hang guard, not a timing assertion)


class Terminal:
    def __init__(self, master: int, process: "subprocess.Popen[bytes]") -> None:
        self._master = master
        self.process = process
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self._stream = pyte.ByteStream(self.screen)

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def _pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self._master, 65536)
        except OSError:  # the other side closed: the program ended
            return False
        if not data:
            return False
        self._stream.feed(data)
        return True

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + WAIT
        while text not in "\n".join(self.screen.display):
            if time.monotonic() > deadline or not self._pump(0.2):
                raise AssertionError(f"{text!r} never appeared on screen:\n{self.text}")

    def wait_for_prompt(self) -> None:
        """Until the program waits at its ``?`` prompt: a key typed earlier reaches the terminal
        before line editing has taken it over, and a Ctrl-D there is lost."""
        deadline = time.monotonic() + WAIT
        while [line.rstrip() for line in self.screen.display if line.strip()][-1:] != ["?"]:
            if time.monotonic() > deadline or not self._pump(0.2):
                raise AssertionError(f"the prompt never came back:\n{self.text}")

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def finish(self) -> int:
        deadline = time.monotonic() + WAIT
        while self._pump(0.2) and self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the program never ended:\n{self.text}")
        code = self.process.wait(WAIT)
        while self._pump(0.05):  # whatever was still buffered
            if self.process.poll() is not None and not select.select([self._master], [], [], 0)[0]:
                break
        return code


@contextmanager
def terminal(kb: Path, *args: str) -> Iterator[Terminal]:
    master, slave = pty.openpty()
    ioctl(slave, TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
        "COLUMNS": str(COLUMNS),
        "LINES": str(ROWS),
        "CONFER_DATA_DIR": str(kb / ".confer"),
    }
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        cwd=kb,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    try:
        yield Terminal(master, process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def test_index_summaries_stay_on_screen_above_the_progress_bars(sample_dir: Path) -> None:
    with terminal(sample_dir, "index") as term:
        assert term.finish() == 0
    lines = term.text.splitlines()
    for name in ("engineering", "security", "people", "product"):
        assert any(line.startswith(f"{name}: ") and "passages (+" in line for line in lines), term.text
    assert "━" not in term.text  # the bars are gone once indexing ends


def test_interactive_prompt_keeps_history_across_sessions_with_line_editing(sample_dir: Path) -> None:
    with terminal(sample_dir, "index") as term:
        assert term.finish() == 0
    with terminal(sample_dir, "ask") as term:
        term.wait_for("? ")
        # Typed with a typo, then fixed by line editing: Ctrl-A (start of line), delete the extra word.
        term.type("oops How much is the home office budget?")
        term.type("\x01" + "\x1b[3~" * 5 + "\r")
        term.wait_for("1,000 euros")
        term.wait_for_prompt()
        term.type("\x04")  # Ctrl-D
        assert term.finish() == 0
    history = sample_dir / ".confer/history"
    assert history.read_text().splitlines()[-1] == "How much is the home office budget?"
    assert history.stat().st_mode & 0o077 == 0
    with terminal(sample_dir, "ask") as term:
        term.wait_for("? ")
        term.type("\x1b[A\r")  # arrow up: the previous session's question
        term.wait_for("1,000 euros")
        term.wait_for_prompt()
        term.type("\r")  # an empty line quits
        assert term.finish() == 0
