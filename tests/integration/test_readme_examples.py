"""README's example output is what the commands it shows print today (``make docs`` writes it)."""

from pathlib import Path

import pytest

from bench import readme
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def outputs(vector_cache_path: Path) -> list[str]:
    """Each example run in a new process on a fresh copy of the samples, as ``make docs`` runs it
    (once per module, with the run's shared cache of passage vectors)."""
    return readme.run_examples(README, vector_cache=vector_cache_path)


def test_readme_shows_what_its_commands_print(outputs: list[str]) -> None:
    shown = readme.examples(README)
    assert [e.command.split()[:2] for e in shown][:1] == [["confer", "ask"]]  # the answer opens README
    diff = readme.differences(README, outputs)
    assert diff == "", f"README's examples are stale: run `make docs`\n{diff}"


def test_an_example_edited_to_something_false_is_caught(outputs: list[str]) -> None:
    """The check compares every line but the timing: a changed figure, a dropped source or another
    sentence each make it fail."""
    [first, *_] = readme.examples(README)
    body = first.output
    sources = body.split("\nSources\n", 1)[1].splitlines()
    for false in (
        body.replace(" sources\n", " sources (cached)\n"),
        body.replace(sources[0] + "\n", ""),
        body.replace("[1].", "[2].", 1),
        body.replace("\n\n", "\nThe policies agree on everything [1].\n\n", 1),
    ):
        assert false != body
        assert readme.differences(README.replace(body, false, 1), outputs) != ""
    retimed = body.replace(body.rsplit("\n", 2)[-2].split(" s · ")[0] + " s · ", "9.99 s · ")
    assert retimed != body and readme.differences(README.replace(body, retimed, 1), outputs) == ""


def test_make_docs_rewrites_the_blocks_in_place(outputs: list[str]) -> None:
    stale = README.replace(readme.examples(README)[0].output, "an answer from long ago\n", 1)
    rewritten = readme.rewritten(stale, outputs)
    assert readme.differences(rewritten, outputs) == ""
    assert rewritten.count(readme.MARKER) == README.count(readme.MARKER) >= 1
    assert "an answer from long ago" not in rewritten
