"""``confer`` as people run it: exit codes, one clear line on errors, --json on stdout."""

import argparse
import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.terminal.cli import build_parser, main
from tests.conftest import ROOT


@pytest.fixture
def kb(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample_dir)
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    return sample_dir


def test_index_then_ask_json(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"engineering: 8 documents, \d+ passages \(\+\d+ −0, 0 unchanged\)", out)
    assert main(["ask", "How long is parental leave?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["mode"] == "extractive"
    assert "20 weeks" in payload["answer"]
    assert {c["n"] for c in payload["citations"]} == {
        int(n) for n in re.findall(r"\[(\d+)\]", payload["answer"])
    }
    assert all(c["status"] in ("ok", "empty", "failed", "timeout") for c in payload["collections"])


def test_index_again_changes_nothing_and_named_index_works(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    capsys.readouterr()
    assert main(["index", "product"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("product:") and "(+0 −0," in out and "engineering" not in out


def test_ask_shows_progress_then_the_answer_and_sources(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["index"])
    capsys.readouterr()
    assert main(["ask", "How do the engineering and security policies differ on production access?"]) == 0
    captured = capsys.readouterr()
    err, out = captured.err, captured.out
    assert "Researching: Engineering handbook, Security policy" in err
    assert re.search(r"Engineering handbook: done, \d+ sources", err)
    assert re.search(r"Security policy: done, \d+ sources", err)
    assert "Sources" in out and "[1]" in out and "production-access.md" in out
    assert "Researching" not in out and "done," not in out  # progress is not the answer


def test_a_not_found_reply_reads_as_a_paragraph_then_its_closest_source(
    kb: Path, embedding_settings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["index"])
    capsys.readouterr()
    assert main(["ask", "Who is the CEO of Kestrel Systems?"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"found no direct answer\. The closest I found[^\n]*\n\nSources\n\[1\]", out), out
    assert main(["ask", "in:security how many weeks of parental leave?"]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"ask again with in:people\.\n\n(Sources\n(\[\d\][^\n]*\n)+\n)?[\d.]+ s · 1 collection", out
    ), out


def test_a_not_found_reply_offers_first_what_the_answer_judge_finds_likeliest(
    kb: Path, embedding_settings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # The words' closest sentence ("Beacon sends webhooks when a shipment changes status") no
    # longer leads: the sentence the judge ranks first, the one that answers, does.
    main(["index"])
    capsys.readouterr()
    assert main(["ask", "how does a customer check a webhook really came from us"]) == 0
    out = capsys.readouterr().out
    assert "found no direct answer" in out, out
    closest = out.split("The closest I found, which may not answer it:", 1)[1]
    assert closest.lstrip().startswith("Each webhook carries a Beacon-Signature header"), out


def test_collections_lists_counts(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collections"]) == 0
    assert "not indexed" in capsys.readouterr().out
    main(["index"])
    capsys.readouterr()
    main(["collections"])
    lines = capsys.readouterr().out.splitlines()[:4]
    assert lines[2] == "people       People policies       9 documents, 15 passages"
    columns = [re.fullmatch(r"(\S+ +)(.+?\S +)(\d+ documents, \d+ passages)", line) for line in lines]
    assert all(columns) and len({(m.start(2), m.start(3)) for m in columns if m}) == 1, lines  # aligned


def test_collections_shows_the_effective_channel_policy(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["collections"])
    assert (
        "everywhere (no channels section): engineering, security, people, product" in capsys.readouterr().out
    )
    with (kb / "collections.yaml").open("a") as file:
        file.write("channels:\n  C0123ABCD: {allow: [engineering, security], default: [engineering]}\n")
    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    assert "C0123ABCD: engineering, security; default engineering" in out
    assert "every other place (unlisted channels, DMs): nothing: Confer refuses to answer there" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ask", "   "], "Please ask a question"),
        (["ask", "in:security"], "Please ask a question"),
        (["ask", "in:nope what is this?"], "there is no collection 'nope'"),
        (["ask", "what?", "--in", "nope"], "there is no collection 'nope'"),
        (["index", "nope"], "there is no collection 'nope'"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    kb: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_missing_and_malformed_collections_file(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONFER_COLLECTIONS", str(kb / "missing.yaml"))
    assert main(["ask", "hello"]) == 2
    assert "missing.yaml: file not found" in capsys.readouterr().err
    (kb / "bad.yaml").write_text("collections:\n  - name: x\n    title: X\n    sources: [a]\n    bogus: 1\n")
    monkeypatch.setenv("CONFER_COLLECTIONS", str(kb / "bad.yaml"))
    assert main(["index"]) == 2
    err = capsys.readouterr().err
    assert "collections.0.bogus: unknown key" in err and len(err.strip().splitlines()) == 1


def test_bad_settings_exit_2_naming_the_variable(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONFER_MAX_FANOUT", "-1")
    assert main(["collections"]) == 2
    assert "CONFER_MAX_FANOUT" in capsys.readouterr().err


def test_corrupt_pdf_is_reported_by_name_and_the_rest_is_indexed(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb / "samples/security/broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    assert main(["index", "security"]) == 0
    captured = capsys.readouterr()
    assert "broken.pdf: not a readable PDF" in captured.err
    assert re.search(r"security: 8 documents, \d+ passages .*, 1 file skipped$", captured.out.strip())


def test_a_source_glob_that_matches_nothing_stops_before_writing(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (kb / "collections.yaml").read_text().replace("samples/product/**/*", "samples/produkt/**/*")
    (kb / "collections.yaml").write_text(text)
    assert main(["index"]) == 2
    assert "'samples/produkt/**/*' matches no files" in capsys.readouterr().err
    assert not (kb / ".confer/index.sqlite3").exists()


def test_interactive_session_answers_each_line(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["index"])
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("How much is the home office budget?\nin:nope hi\n\n"))
    assert main(["ask"]) == 0
    captured = capsys.readouterr()
    assert "1,000 euros" in captured.out
    assert "there is no collection 'nope'" in captured.err


def test_interactive_session_is_a_conversation_and_new_starts_over(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["index"])
    capsys.readouterr()
    lines = (
        "How long is parental leave? in:people\nAnd can it be split up?\n/new\nAnd can it be split up?\n\n"
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(["ask"]) == 0
    captured = capsys.readouterr()
    first, _, rest = captured.out.partition("three blocks")
    assert "20 weeks" in first and "parental-leave.pdf" in rest
    # the reading of the follow-up and the progress are on stderr, beside the answers on stdout
    before_new, _, after_new = captured.err.partition("New conversation")
    assert "Searching: can parental leave be split up?" in before_new
    assert before_new.count("Researching: People policies") == 2  # in:people carried from the first turn
    assert "Searching:" not in after_new  # /new: nothing earlier to read the follow-up with


def test_python_dash_m_bot_prints_only_json_on_stdout(kb: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "bot", "index"], cwd=kb, env=env, check=True, capture_output=True)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "ask", "What is the rate limit for Growth accounts?", "--json"],
        cwd=kb,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert "50 requests per second" in payload["answer"]


TEAMS_ID = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID"


@pytest.mark.parametrize(
    ("env", "named", "not_named"),
    [
        (
            {},
            ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", TEAMS_ID, "CONFER_TEAMS_LOCAL"],
            [],
        ),
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, ["SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"], [TEAMS_ID]),
        ({"SLACK_SIGNING_SECRET": "abc"}, ["SLACK_BOT_TOKEN", "xoxb-", "OAuth & Permissions"], [TEAMS_ID]),
    ],
)
def test_serve_without_credentials_names_every_variable_that_would_fix_it(
    kb: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    named: list[str],
    not_named: list[str],
) -> None:
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        TEAMS_ID,
        "CONFER_TEAMS_LOCAL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("confer: Invalid configuration: "), err
    assert all(name in err for name in named), err
    assert not any(name in err for name in not_named), err


@pytest.mark.parametrize(
    "argv", [["index"], ["collections"], ["ask", "How long is parental leave?"], ["serve"]]
)
def test_a_data_dir_that_cannot_be_created_is_named_with_its_fix(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    (kb / "blocker").write_text("a file where the data folder's parent should be")
    monkeypatch.setenv("CONFER_DATA_DIR", "blocker/.confer")  # relative, as a working folder resolves it
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "abc")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"confer: CONFER_DATA_DIR: cannot use {kb / 'blocker/.confer'} "), err
    assert "(not a directory)" in err and "Set CONFER_DATA_DIR to a folder this user can write" in err


def test_the_log_tells_found_from_not_found_from_failed(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["index"])
    monkeypatch.setenv("CONFER_LOG_LEVEL", "INFO")
    monkeypatch.setenv("CONFER_LOG_FORMAT", "json")
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    outcomes = []
    try:
        for question in ("How long is parental leave?", "Who is the CEO of Kestrel Systems?"):
            capsys.readouterr()
            assert main(["ask", question, "--json"]) == 0
            lines = [
                json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")
            ]
            outcomes += [line["outcome"] for line in lines if line["event"] == "question finished"]
        (kb / ".confer/index.sqlite3").write_bytes(b"this is not a database" * 100)
        assert main(["ask", "How long is parental leave?", "--json"]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
        outcomes += [line["outcome"] for line in lines if line["event"] == "question finished"]
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    assert outcomes == ["answered", "not_found", "failed"]


def test_a_corrupt_index_file_is_one_clear_line_not_a_traceback(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb / ".confer").mkdir()
    (kb / ".confer/index.sqlite3").write_bytes(b"this is not a database" * 100)
    assert main(["collections"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "could not be read (DatabaseError)" in err and "Traceback" not in err
    assert main(["ask", "How long is parental leave?", "--json"]) == 0  # every branch fails, cleanly
    payload = json.loads(capsys.readouterr().out)
    assert {c["status"] for c in payload["collections"]} == {"failed"}
    assert "No collection could be searched" in payload["answer"]


def test_version_and_bare_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert re.fullmatch(r"confer \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: confer ") and "index, ask, collections, serve, eval" in err
    assert "required" not in err


def test_help_describes_each_command_and_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("index", "ask", "collections", "serve", "eval"):
        assert re.search(rf"^\s+{command}\s", out, re.MULTILINE)
    assert main(["ask", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Without a QUESTION, asks interactively" in out and "QUESTION    the question" in out
    assert main(["eval", "--help"]) == 0
    assert "questions_<split>.jsonl" in capsys.readouterr().out
    assert main(["index", "--help"]) == 0
    assert "collections to index (default: all)" in capsys.readouterr().out


def test_help_answers_without_loading_the_graph_or_the_clients() -> None:
    probe = (
        "import sys\nfrom bot.terminal.cli import build_parser, main\nmain(['--help'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'langchain_core', 'langsmith', 'elasticsearch', 'pydantic', 'rich', 'graph',"
        " 'retrieval'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.splitlines()[-1] == ""


def test_collections_does_not_load_the_graph_or_elasticsearch(kb: Path) -> None:
    probe = (
        "import sys\nfrom bot.terminal.cli import build_parser, main\nmain(['collections'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'langsmith', 'elasticsearch', 'elastic_transport', 'openai'))))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=kb, env=env
    )
    assert "not indexed" in result.stdout
    assert result.stdout.splitlines()[-1] == ""


def test_a_mistyped_collection_gets_a_suggestion(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "in:enginering who approves production access?"]) == 2
    assert "there is no collection 'enginering' (did you mean 'engineering'?)" in capsys.readouterr().err
    assert main(["index", "securty"]) == 2
    assert "(did you mean 'security'?)" in capsys.readouterr().err
    assert main(["index", "zzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_eval_of_a_missing_folder_names_the_folder(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "no-such-benchmark"]) == 2
    err = capsys.readouterr().err
    assert "no-such-benchmark: no such folder" in err and "collections.yaml" not in err


def test_index_names_each_skipped_path_on_its_own_line(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kb / "samples/people/gone.md").symlink_to(kb / "samples/people/never-existed.md")
    (kb / "samples/people/archive.md").mkdir()
    (kb / "samples/people/archive.md/old-leave.txt").write_text("Old leave rules.\n")
    assert main(["index", "people"]) == 0
    err = capsys.readouterr().err
    assert "confer: skipped samples/people/gone.md: a symbolic link to nothing\n" in err
    assert "confer: skipped samples/people/archive.md: a folder named like a document" in err
    assert len([line for line in err.splitlines() if "skipped samples/" in line]) == 2


def test_ask_prints_only_the_answer_on_stdout_and_its_progress_on_stderr(kb: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "bot", "index"], cwd=kb, env=env, check=True, capture_output=True)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "ask", "How long is parental leave?"],
        cwd=kb,
        env={**env, "CONFER_LOG_LEVEL": "INFO"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("\nPeople policies\nEvery parent"), (
        result.stdout
    )  # `2>/dev/null`: the answer
    assert re.search(r"\n[\d.]+ s · 1 collection · \d sources?\n$", result.stdout)
    assert "Researching" not in result.stdout and "question finished" not in result.stdout
    assert "Researching: People policies" in result.stderr and "question finished" in result.stderr


def test_ask_json_without_a_question_is_an_error_not_a_session(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("How long is parental leave?\n\n"))
    assert main(["ask", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == 'confer: ask --json needs a QUESTION: confer ask "QUESTION" --json\n'


def test_help_and_list_at_the_prompt_do_what_they_say(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["index"])
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("help\nlist\n\n"))
    assert main(["ask"]) == 0
    captured = capsys.readouterr()
    assert "Researching" not in captured.err  # neither was researched as a question
    assert "list          shows the collections" in captured.out
    assert re.search(r"^  security     Security policy       Access control", captured.out, re.MULTILINE)
    assert "`" not in captured.out + captured.err


def test_help_shows_no_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(commands.choices) >= 6
    for argv in (["--help"], *([command, "--help"] for command in commands.choices)):
        assert main(argv) == 0
        assert "`" not in capsys.readouterr().out, argv
    assert main([]) == 2
    assert "`" not in capsys.readouterr().err


def test_index_says_when_an_index_of_an_older_text_format_is_rebuilt(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index written before passages' text format was stored (or under an older one) is rebuilt
    by the next ``confer index``, which says so once."""
    import sqlite3

    from retrieval.backends.embedded import DATABASE_NAME
    from retrieval.passages import TEXT_FORMAT

    assert main(["index"]) == 0
    capsys.readouterr()
    with sqlite3.connect(kb / ".confer" / DATABASE_NAME) as db:
        db.execute("UPDATE collections SET text_format = NULL WHERE name = 'product'")
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert out.count("older version") == 1
    assert (
        "product: the index was built by an older version of Confer, which read documents differently "
        f"(text format 1, now {TEXT_FORMAT}): rebuilt.\nproduct: "
    ) in out
    assert main(["index"]) == 0
    assert "older version" not in capsys.readouterr().out


def test_index_every_takes_a_duration_and_refuses_anything_else(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(["index", "--every", "15m"]).every == 900
    assert parser.parse_args(["index", "--every", "2h"]).every == 7200
    assert parser.parse_args(["index", "--every", "90s"]).every == 90
    assert main(["index", "--every", "15 minutes"]) == 2
    assert "'15 minutes' is no duration: write it like 90s, 15m or 2h" in capsys.readouterr().err
    assert main(["index", "--every", "5s"]) == 2
    assert "--every must be at least 10s" in capsys.readouterr().err


def _index_network(
    folder: Path, page: str, text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Write ``text`` as ``folder``'s network/``page`` and index network/*.md as one collection,
    "Networking", from inside the folder."""
    (folder / "network").mkdir(parents=True)
    (folder / "network" / page).write_text(text)
    (folder / "collections.yaml").write_text(
        "collections:\n  - name: network\n    title: Networking\n    sources: [network/*.md]\n"
    )
    monkeypatch.chdir(folder)
    monkeypatch.setenv("CONFER_DATA_DIR", str(folder / ".confer"))
    assert main(["index"]) == 0
    capsys.readouterr()


def test_a_sentence_that_introduces_a_list_is_said_with_its_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # "… open the following ports:" says nothing without the ports; a long list is not dumped.
    _index_network(
        tmp_path / "kb",
        "firewall.md",
        "# Firewall setup\n\n"
        "Sync runs between devices on the same network or through a relay.\n\n"
        "If your machine has a local firewall, you need to open the following ports for incoming "
        "and outgoing traffic:\n\n"
        "- Port 22000/TCP: the sync protocol over TCP\n"
        "- Port 22000/UDP: the sync protocol over QUIC\n"
        "- Port 21027/UDP: discovery broadcasts\n\n"
        "The relay servers the firewall must reach are these:\n\n"
        + "".join(f"- relay{n}.example.net\n" for n in range(1, 10)),
        monkeypatch,
        capsys,
    )
    assert main(["ask", "which ports do I need to open in the firewall?"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(
        line.endswith("open the following ports for incoming and outgoing traffic: [1]") for line in lines
    ), out
    for item in ("Port 22000/TCP: the sync protocol over TCP", "Port 22000/UDP: the sync protocol over QUIC"):
        assert f"• {item} [1]" in lines, out  # each item on a line of its own
    assert "• Port 21027/UDP: discovery broadcasts [1]" in lines, out
    assert main(["ask", "which relay servers must the firewall reach?"]) == 0
    assert "relay9.example.net" not in capsys.readouterr().out


def test_a_sentence_that_introduces_a_command_is_said_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # "… you can allow the ports by running:" is of no use without the command it introduces.
    _index_network(
        tmp_path / "kb",
        "ufw.md",
        "# Uncomplicated Firewall\n\n"
        "Sync needs its ports open in the firewall of every device.\n\n"
        "If you use ufw on Linux, you can allow the ports of the sync protocol by running:\n\n"
        "```sh\nsudo ufw allow syncthing\n```\n\n"
        "Allowing access to the web interface from other machines is not necessary.\n",
        monkeypatch,
        capsys,
    )
    assert main(["ask", "how do I allow the ports with ufw?"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(n for n, line in enumerate(lines) if line.endswith("by running: [1]"))
    assert lines[at + 1] == "    sudo ufw allow syncthing", lines  # on a line of its own, indented
    assert main(["ask", "how do I allow the ports with ufw?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert "by running: [1]\n    sudo ufw allow syncthing" in payload["answer"]
