"""The errors a newcomer meets in the first hour, as the terminal shows them: one line on stderr that
says what to do next, and the exit status README promises (0 success, 2 bad input or
configuration, 1 anything else)."""

import io
import json
import logging
import sys
from pathlib import Path

import pytest

from bot import messages
from bot.terminal.cli import main

PARENTAL = "How long is parental leave?"


@pytest.fixture
def kb(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample_dir)
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    return sample_dir


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("confer: ")
    return lines[0]


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_asking_before_indexing_says_to_run_confer_index(
    kb: Path, capsys: pytest.CaptureFixture[str], json_flag: list[str]
) -> None:
    assert main(["ask", PARENTAL, *json_flag]) == 2
    captured = capsys.readouterr()
    line = _one_line(captured.err)
    assert line == (
        "confer: Nothing to search yet: Engineering handbook, Security policy, People policies, "
        "Beacon product docs not indexed. Run `confer index` first, then ask again."
    )
    assert captured.out == ""  # nothing was searched: no progress, no answer


def test_the_prompt_before_indexing_says_the_same_and_stops(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{PARENTAL}\n"))
    assert main(["ask"]) == 2
    assert "Run `confer index` first" in _one_line(capsys.readouterr().err)


def test_a_collection_never_indexed_is_named_under_the_answer_with_what_to_run(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "people"]) == 0
    capsys.readouterr()
    assert main(["ask", f"{PARENTAL} in:people,security"]) == 0
    captured = capsys.readouterr()
    assert "20 weeks" in captured.out and "Security policy (not indexed yet)" in captured.out
    assert captured.err.splitlines()[-1] == (
        "confer: Security policy not indexed yet: run `confer index` to search it too."
    )


@pytest.mark.parametrize("question", ["🤔", "?!", "👍 🎉", "in:people 🤔", "   ", "…"])
def test_a_question_without_words_is_asked_like_an_empty_one(
    kb: Path, capsys: pytest.CaptureFixture[str], question: str
) -> None:
    assert main(["ask", question]) == 2
    captured = capsys.readouterr()
    assert _one_line(captured.err) == f"confer: {messages.EMPTY_QUESTION}"
    assert captured.out == ""  # not the interactive help


def test_the_prompt_answers_a_line_without_words_with_the_same_line_and_goes_on(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["index", "people"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"🤔\n{PARENTAL}\n\n"))
    assert main(["ask", "--in", "people"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count(f"confer: {messages.EMPTY_QUESTION}") == 1
    assert "20 weeks" in captured.out


def test_files_that_are_not_text_are_skipped_with_exactly_one_line_each(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    people = kb / "samples/people"
    (people / "zeros.md").write_bytes(b"\x00" * 4096)  # NUL bytes are valid UTF-8, and no text
    (people / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\xfd")
    (people / "latin1.md").write_bytes("# Café\n\nCongés payés: 25 jours.\n".encode("latin-1"))
    assert main(["index", "people"]) == 0
    captured = capsys.readouterr()
    assert sorted(captured.err.splitlines()) == [
        f"confer: Skipped {people / 'latin1.md'}: not UTF-8 text",
        f"confer: Skipped {people / 'photo.txt'}: not UTF-8 text",
        f"confer: Skipped {people / 'zeros.md'}: not a text file (binary data)",
    ]  # and no WARNING log line repeating each
    assert captured.out.strip().endswith("3 files skipped")
    assert main(["ask", "in:people what does zeros say?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert all("zeros" not in c["url"] for c in payload["citations"])


def test_with_logs_on_a_skipped_file_is_still_said_once(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONFER_LOG_LEVEL", "INFO")
    (kb / "samples/people/zeros.md").write_bytes(b"\x00" * 64)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        assert main(["index", "people"]) == 0
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    err = capsys.readouterr().err
    assert err.count("zeros.md") == 1, err


def _collections(kb: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (kb / "mine.yaml").write_text(text)
    monkeypatch.setenv("CONFER_COLLECTIONS", str(kb / "mine.yaml"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "collections:\n  - name: handbook\n    titel: Handbook\n    sources: [samples]\n",
            "mine.yaml: collections.0.titel: unknown key (did you mean 'title'?)",  # not also "title missing"
        ),
        (
            "collections:\n  - name: Engineering Docs\n    title: Handbook\n    sources: [samples]\n",
            "collections.0.name: 'Engineering Docs' is not a collection name: lowercase letters, digits, "
            "'-' and '_', starting with a letter or digit, at most 63 characters (for example "
            "'engineering-docs')",
        ),
        (
            "collections:\n  - name: engineering\n    title: Handbook\n    sources: [samples]\n"
            "channels:\n  C0123ABCD: {allow: [enginering]}\n",
            "channels.C0123ABCD: unknown collection 'enginering' (did you mean 'engineering'?)",
        ),
        (
            "collectons:\n  - name: engineering\n",
            "collectons: unknown key (did you mean 'collections'?)",
        ),
        (
            "collections:\n  - name: engineering\n    title: Handbook\n    sources: []\n",
            "collections.0.sources: needs at least one file, folder or glob",
        ),
    ],
)
def test_collections_file_errors_are_in_confers_words_with_did_you_mean(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    _collections(kb, text, monkeypatch)
    assert main(["index"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"confer: Collections file {kb / 'mine.yaml'}: ")
    assert line.endswith(expected), line
    assert "String should" not in line and "pattern" not in line


def test_a_mistyped_name_in_dot_env_gets_did_you_mean_and_no_secret(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb / ".env").write_text(
        "CONFER_TOPK=3\nSLACK_BOT_TOKN=xoxb-secret-value\nexport CONFER_FANCY=1\n"
        "COMPOSE_PROJECT_NAME=confer\nDOCUMENTS_DIR=/srv/docs\nCONFER_MAX_FANOUT=lots\n"
    )
    assert main(["collections"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == (
        "confer: Invalid configuration: CONFER_TOPK (in .env): not a setting; did you mean CONFER_TOP_K?; "
        "SLACK_BOT_TOKN (in .env): not a setting; did you mean SLACK_BOT_TOKEN?; "
        "CONFER_FANCY (in .env): not a setting (README, Configuration, lists them); "
        "CONFER_MAX_FANOUT: must be a whole number"
    )
    assert "xoxb-secret-value" not in line


def test_a_dot_env_of_known_names_and_other_tools_names_is_accepted(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import ROOT

    example = (ROOT / ".env.example").read_text()
    (kb / ".env").write_text(example + "COMPOSE_PROJECT_NAME=confer\nDOCUMENTS_DIR=/srv/docs\n")
    assert main(["collections"]) == 0, capsys.readouterr().err


def test_eval_without_matplotlib_says_what_a_venv_user_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = tmp_path / "mini"
    dataset.mkdir()
    (dataset / "leave.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Leave", "text": "Parental leave lasts twenty weeks."}) + "\n"
    )
    (dataset / "collections.yaml").write_text(
        "collections:\n  - name: people\n    title: People\n    sources: [leave.jsonl]\n"
    )
    question = {"id": "q1", "question": PARENTAL, "answer": "twenty weeks", "type": "bridge"}
    (dataset / "questions_dev.jsonl").write_text(
        json.dumps(question | {"gold_ids": ["p1"], "gold_collections": ["people"]}) + "\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    assert main(["eval", str(dataset), "--json", "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"confer: {messages.PLOTS_SKIPPED}" in err.splitlines()
    assert (
        "make eval" in messages.PLOTS_SKIPPED
        and ".venv/bin/pip install -e '.[eval]'" in messages.PLOTS_SKIPPED
    )
