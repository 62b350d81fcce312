"""``confer ask --trace`` as people run it: the answer, then how it was found, on stdout (progress
stays on stderr); ``--json`` carries the same trace under ``trace``."""

import json
import re
from pathlib import Path

import pytest

from bot.chat import trace_messages
from bot.terminal.cli import main
from tests.fakes.llm_api import FakeLLM
from tests.integration.test_slack_feedback import _confer


@pytest.fixture
def kb(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample_dir)
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    return sample_dir


def test_ask_trace_prints_how_the_answer_was_found_after_it(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    capsys.readouterr()
    question = "How do the engineering and security policies differ on production access?"
    assert main(["ask", question, "--trace"]) == 0
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    answer, _, trace = out.partition(trace_messages.TRACE_TITLE)
    assert "Sources" in answer and "[1]" in answer  # the answer comes first
    assert trace_messages.TRACE_TITLE not in err and "Researching" in err  # stderr stays progress
    for title in ("Engineering handbook", "Security policy"):
        assert re.search(rf"^  {title}: \"[^\"]+\": \d+ sources? in [\d.]+ s$", trace, re.MULTILINE), trace
    hits = re.findall(
        r"^    \d\. .+ \((p_[0-9a-f]{20})\): (?:word [\d.]+, meaning [\d.]+, )?fused [\d.]+$", trace, re.M
    )
    assert hits, trace
    assert "Answer: answered" in trace and trace_messages.TRACE_NO_MODEL in trace
    # The candidate sentences the answer passed over, each with its text and the rule.
    why = "|".join(re.escape(words) for words in trace_messages.TRACE_DROP_REASONS.values())
    passed = re.findall(rf'^  Dropped: "(.+)": (?:{why})$', trace, re.MULTILINE)
    assert passed and not any(sentence in answer for sentence in passed), trace

    assert main(["ask", question, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    branches = [b for r in payload["trace"]["rounds"] for b in r["branches"]]
    assert {b["collection"] for b in branches} == {"engineering", "security"}
    assert all(b["queries"] and b["hits"] for b in branches)
    cited = {c["passage_id"] for c in payload["citations"]}
    assert cited <= {h["passage_id"] for b in branches for h in b["hits"]} | {
        p for k in payload["trace"]["decision"]["kept"] for p in k["passage_ids"]
    }
    decision = payload["trace"]["decision"]
    assert decision["outcome"] == "found"
    kept = {k["text"] for k in decision["kept"]}
    assert decision["dropped"] and all(
        d["text"] and d["text"] not in kept and d["reason"] in trace_messages.TRACE_DROP_REASONS
        for d in decision["dropped"]
    )
    assert {c for d in decision["dropped"] for c in d["collections"]} <= {"engineering", "security"}


async def test_ask_trace_with_a_model_lists_its_calls_and_the_sentences_it_dropped(
    kb: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = await FakeLLM(lie="number").start()
    monkeypatch.setenv("LLM_BASE_URL", llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    try:
        assert await _confer(["index"]) == 0
        capsys.readouterr()
        assert await _confer(["ask", "How long is parental leave? in:people", "--trace"]) == 0
    finally:
        await llm.stop()
    trace = capsys.readouterr().out.partition(trace_messages.TRACE_TITLE)[2]
    calls = re.findall(r"^  ([a-z ]+) with fake-model, [\d.]+ s, \d+ \+ \d+ tokens: ok$", trace, re.MULTILINE)
    assert len(calls) == len(llm.stages()) and {"plan", "draft"} <= set(calls), (calls, llm.stages())
    # Every sentence the model wrote with a changed number is named, with why it was dropped.
    assert llm.lies, "the fake changed no sentence"
    for lie in llm.lies:
        assert f'Dropped: "{lie}": a number its source does not give' in trace, (lie, trace)
