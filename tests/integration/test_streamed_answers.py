"""A model-written answer shown as it is verified: each sentence reaches Slack's stream, the Teams
status card and the terminal once it has passed, in order; a sentence the judge refuses reaches
none of them, not even for a moment."""

import io
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from rich.console import Console

from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from bot.terminal.surface import ProgressView, render_answer
from graph.context import ResearchLimits
from graph.events import ProgressEvent, SentenceVerified
from graph.llm.openai_client import build_chat_model
from retrieval.backends import SearchBackend
from retrieval.collections import CollectionsConfig
from tests.fakes.llm_api import FakeLLM, Reply
from tests.integration.conftest import Harness, _harness, index_samples
from tests.integration.test_slack_stream import _readable
from tests.integration.test_teams import _start, _stop

REFUSED = "In short"  # how the fake rewrites every second sentence: a paraphrase the guards pass
QUESTION = "in:people How long is parental leave and what about time off?"


def _every_second_sentence_rewritten() -> Callable[[str], str]:
    """The fake model's answer with every second sentence paraphrased: not a passage sentence,
    so it goes to the judge, which (scripted) refuses every sentence it is asked about."""
    count = itertools.count()

    def rewrite(sentence: str) -> str:
        return f"{REFUSED}, {sentence[0].lower()}{sentence[1:]}" if next(count) % 2 else sentence

    return rewrite


@pytest.fixture
async def refusing_judge() -> AsyncIterator[FakeLLM]:
    fake = await FakeLLM().start()
    fake.translate = _every_second_sentence_rewritten()
    fake.script("judge", Reply(content=json.dumps({"verdicts": []})), times=50)  # no verdict: refused
    yield fake
    await fake.stop()


def _flat(text: str) -> str:
    return " ".join(_readable(text).split())


async def test_a_sentence_the_judge_refuses_never_reaches_the_terminal(
    sample_config: CollectionsConfig, sample_dir: Path, refusing_judge: FakeLLM
) -> None:
    backend: SearchBackend = await index_samples(sample_dir)
    model = build_chat_model(base_url=refusing_judge.url, api_key="k", model="m")
    service = ResearchService(
        config=sample_config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=30,
        llm=model,
    )
    out = io.StringIO()
    view = ProgressView(Console(file=out, width=400), sample_config)
    printed: list[str] = []  # the terminal's text each time a verified sentence came

    async def on_event(event: ProgressEvent) -> None:
        await view.handle(event)
        if isinstance(event, SentenceVerified):
            printed.append(out.getvalue())

    try:
        answer = await service.answer(service.make_question(QUESTION), surface="cli", on_event=on_event)
        Console(file=out, width=400).print(
            render_answer(answer, sample_config, 1.0, shown=view.sentences_shown)
        )
    finally:
        await service.close()
    assert answer.mode == "llm" and view.sentences_shown >= 1
    assert "judge" in refusing_judge.stages()  # the paraphrase was judged, and refused
    said = [s.text for sec in answer.sections for s in sec.sentences]
    assert all(REFUSED not in s for s in said)
    assert printed and all(REFUSED not in text for text in printed)
    assert REFUSED not in out.getvalue()
    for sentence in said[: view.sentences_shown]:  # printed as it was verified, and only once
        assert out.getvalue().count(sentence.rstrip(".")) == 1, sentence


async def test_a_sentence_the_judge_refuses_never_reaches_slacks_stream(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, refusing_judge: FakeLLM
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", refusing_judge.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    async for harness in _harness(sample_dir, monkeypatch):
        await _ask_slack(harness, refusing_judge)


async def _ask_slack(harness: Harness, model: FakeLLM) -> None:
    await harness.slack.mention(QUESTION)
    await harness.fake.wait_for(lambda: len(harness.fake.finished_streams()) == 1, within=30)
    [stream] = harness.fake.finished_streams()
    assert "judge" in model.stages()
    assert all(REFUSED not in _flat(s) for s in stream.strings())
    # The verified sentences went out in appends before the stream stopped: shown as verified.
    appended = [c for c in harness.fake.ok_calls("chat.appendStream") for c in c.params["chunks"]]
    streamed = _flat("".join(c["text"] for c in appended if c["type"] == "markdown_text"))
    assert re.search(r"\[1\]", streamed), streamed
    assert _flat(stream.text).startswith(streamed)  # the answer continued what was shown


async def test_a_sentence_the_judge_refuses_never_reaches_a_teams_card(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, refusing_judge: FakeLLM
) -> None:
    teams = await _start(
        sample_dir,
        monkeypatch,
        CONFER_TEAMS_LOCAL="true",
        LLM_BASE_URL=refusing_judge.url,
        LLM_API_KEY="sk-test",
        LLM_MODEL="fake-model",
    )
    try:
        assert await teams.post(teams.connector.message(QUESTION)) == 202
        await teams.connector.wait_for(lambda: len(teams.answers()) == 1, within=30)
        assert "judge" in refusing_judge.stages()
        shown = [text for call in teams.connector.calls for text in call.texts]
        assert shown and all(REFUSED not in _flat(text) for text in shown)
        [answer] = teams.answers()
        assert re.search(r"\[1\]", " ".join(answer.texts))
    finally:
        await _stop(teams)
