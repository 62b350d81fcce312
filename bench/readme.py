"""README's example output, produced by the commands it shows.

A code block that follows the line ``<!-- make docs -->`` in README.md opens with ``$ COMMAND``;
everything after that line is what the command prints. ``make docs`` (``python -m bench.readme``)
copies the sample collections to a throw-away folder, indexes them as ``make run`` does (default
settings: the local embedding model, extractive answers, no ``.env``), runs each shown command there
and writes its output back into README.md. ``--check`` writes nothing and exits 1 when README
differs; the test suite does the same. Timings differ from run to run, so they are compared masked.
"""

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = "<!-- make docs -->"
_BLOCK = re.compile(rf"^{re.escape(MARKER)}\n```\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```$", re.M | re.S)
_TIMING = re.compile(r"(?m)^\d+(?:\.\d+)? s · ")
# What the machine's environment may not change in an example: Confer's settings come only from
# the throw-away folder (no .env there), as on a fresh clone.
_SETTINGS_PREFIXES = ("CONFER_", "SLACK_", "LLM_", "ELASTICSEARCH_", "EMBEDDINGS_", "CONNECTIONS__")
_SETTINGS_NAMES = ("REDIS_URL", "DATABASE_URL", "PORT")


@dataclass(frozen=True)
class Example:
    command: str  # as README shows it, after "$ "
    output: str  # as README shows it


def examples(readme: str) -> list[Example]:
    """The generated blocks of ``readme``, in order."""
    return [Example(m["command"], m["output"]) for m in _BLOCK.finditer(readme)]


def masked(text: str) -> str:
    """``text`` with the answer's timing (``1.52 s · 2 collections``) replaced by ``N s``."""
    return _TIMING.sub("N s · ", text)


def _argv(command: str) -> tuple[list[str], bool]:
    """The process to start for a README command (``confer …``), and whether stderr is shown."""
    words = shlex.split(command)
    if not words or words[0] != "confer":
        raise ValueError(f"README example does not run confer: {command}")
    quiet = "2>/dev/null" in words
    words = [w for w in words if w != "2>/dev/null"]
    return [sys.executable, "-m", "bot", *words[1:]], not quiet


def _environment(folder: Path, vector_cache: Path | None) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_SETTINGS_PREFIXES) and name not in _SETTINGS_NAMES
    }
    env |= {"CONFER_DATA_DIR": str(folder / ".confer"), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    if vector_cache is not None:  # the test suite's shared cache of passage vectors
        env["CONFER_EMBEDDINGS_CACHE"] = str(vector_cache)
    return env


def run_examples(readme: str, *, vector_cache: Path | None = None) -> list[str]:
    """Each example's output as the code prints it today, on a fresh copy of the samples."""
    with tempfile.TemporaryDirectory(prefix="confer-readme-") as tmp:
        folder = Path(tmp)
        shutil.copytree(ROOT / "samples", folder / "samples")
        shutil.copy(ROOT / "collections.yaml", folder / "collections.yaml")
        env = _environment(folder, vector_cache)

        def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)

        indexed = run([sys.executable, "-m", "bot", "index"])
        if indexed.returncode != 0:
            raise RuntimeError(f"confer index failed: {indexed.stderr.strip()}")
        outputs = []
        for example in examples(readme):
            argv, with_stderr = _argv(example.command)
            done = run(argv)
            shown = done.stdout + (done.stderr if with_stderr else "")
            outputs.append(shown if shown.endswith("\n") or not shown else shown + "\n")
        return outputs


def rewritten(readme: str, outputs: list[str]) -> str:
    """``readme`` with each generated block's output replaced, in order."""
    replacements = iter(outputs)

    def replace(match: re.Match[str]) -> str:
        return f"{MARKER}\n```\n$ {match['command']}\n{next(replacements)}```"

    return _BLOCK.sub(replace, readme)


def differences(readme: str, outputs: list[str]) -> str:
    """A unified diff of README against what the commands print, timings masked; empty when equal."""
    current = masked(readme).splitlines(keepends=True)
    wanted = masked(rewritten(readme, outputs)).splitlines(keepends=True)
    return "".join(difflib.unified_diff(current, wanted, "README.md", "README.md (as generated)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when README is stale")
    args = parser.parse_args(argv)
    readme = README.read_text(encoding="utf-8")
    if not examples(readme):
        print(f"README.md has no block after {MARKER}", file=sys.stderr)
        return 1
    outputs = run_examples(readme)
    diff = differences(readme, outputs)
    if args.check:
        sys.stdout.write(diff or "README.md's examples are current.\n")
        return 1 if diff else 0
    README.write_text(rewritten(readme, outputs), encoding="utf-8")
    print(f"README.md: {len(outputs)} example(s) written{'' if diff else ' (unchanged but timings)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
