"""Slack's streamed path end to end (the default, ``CONFER_SLACK_PROGRESS=stream``): signed events
into the real Bolt app; the fake Web API records every stream chunk and can refuse the methods."""

import functools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot import messages
from bot.slack.mrkdwn import ZERO_WIDTH
from tests.fakes.llm_api import FakeLLM, Reply
from tests.fakes.slack_api import TEAM_ID, FakeSlackApi, Stream
from tests.integration.conftest import Harness, _harness, running_harness

CITATION = re.compile(r"\[(\d+)\]")
ORDER = ["product", "people", "security", "engineering"]  # planned the other way round


def _footer_sources(blocks: list[dict[str, Any]]) -> dict[int, str]:
    found = {}
    for block in blocks:
        if block["type"] != "context":
            continue
        for element in block["elements"]:
            match = re.match(r"\*\[(\d+)\]\* (.*)", element["text"])
            if match:
                found[int(match.group(1))] = match.group(2)
    return found


def _readable(text: str) -> str:
    """Streamed markdown as a person reads it: escapes and zero-width breaks gone."""
    return re.sub(r"\\(.)", r"\1", text).replace(ZERO_WIDTH, "").replace("&amp;", "&")


def _streams_done(fake: FakeSlackApi, count: int = 1) -> bool:
    return len(fake.finished_streams()) == count


def _one_stream(fake: FakeSlackApi) -> Stream:
    [stream] = fake.finished_streams()
    return stream


async def test_one_streamed_message_shows_the_plan_then_the_verified_answer_and_its_footer(
    stream_harness: Harness,
) -> None:
    harness = stream_harness
    harness.backend.delays = {"product": 0.1, "people": 0.5, "security": 0.9, "engineering": 1.3}
    await harness.slack.mention(
        "in:engineering,security,people,product what happens when a laptop is lost?", ts="1700000001.000100"
    )
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    stream = _one_stream(harness.fake)
    # (besides naming who the answer is for: users.info, conversations.members)
    people = ("auth.test", "users.info", "conversations.members")
    methods = [c.method for c in harness.fake.calls if c.method not in people]
    # A loading state at once, then one streamed reply: no other message, no edit.
    assert methods[0] == "assistant.threads.setStatus" and methods[1] == "chat.startStream"
    assert set(methods) == {
        "assistant.threads.setStatus",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
    [loading] = harness.fake.ok_calls("assistant.threads.setStatus")
    assert loading.params["thread_ts"] == "1700000001.000100" and loading.params["channel_id"] == "C0001"
    [start] = harness.fake.ok_calls("chat.startStream")
    assert start.params["thread_ts"] == "1700000001.000100"
    assert start.params["recipient_user_id"] == "U0USER" and start.params["recipient_team_id"] == TEAM_ID
    assert stream.task_display_mode == "plan"
    # One task per collection, each pending or in progress, then complete, finishing in order.
    tasks = stream.tasks()
    assert set(tasks) == {f"search-{name}" for name in ORDER}
    assert stream.finished_order() == [f"search-{name}" for name in ORDER]
    for task_id, task in tasks.items():
        statuses = stream.statuses(task_id)
        assert statuses[0] in ("pending", "in_progress") and statuses[-1] == "complete", statuses
        assert statuses == sorted(statuses, key=["pending", "in_progress", "complete"].index)
        assert re.fullmatch(r"\d+ sources?|No results", task["output"]), task
    product = tasks["search-product"]
    assert product["sources"] and all(
        s["url"].startswith("https://docs.kestrel.example/") for s in product["sources"]
    )
    # The answer: streamed after every task was final, its markers matching the footer's Sources.
    first_text = next(i for i, c in enumerate(stream.chunks) if c["type"] == "markdown_text")
    last_final = max(
        i for i, c in enumerate(stream.chunks) if c["type"] == "task_update" and c["status"] == "complete"
    )
    assert last_final < first_text
    sources = _footer_sources(stream.blocks)
    assert sources and {int(n) for n in CITATION.findall(_readable(stream.text))} == set(sources)
    feedback = [e for b in stream.blocks if b["type"] == "context_actions" for e in b["elements"]]
    assert [e["type"] for e in feedback] == ["feedback_buttons"]  # the same footer as a posted answer
    titles = [c["title"] for c in stream.chunks if c["type"] == "plan_update"]
    assert titles[-1].startswith("✅ Done in")
    # Coalesced: fewer appends than one per event (a start and a finish per collection).
    assert len(harness.fake.ok_calls("chat.appendStream")) < 8


async def test_a_workspace_that_refuses_streams_is_answered_by_post_and_edit_and_remembered(
    stream_harness: Harness,
) -> None:
    harness = stream_harness
    harness.fake.refuse_streams = "not_allowed"
    await harness.slack.mention("in:people how long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [status_ts] = harness.fake.status_messages()
    await harness.fake.wait_for(lambda: "Done in" in (harness.fake.updates(status_ts) or [""])[-1])
    assert "20 weeks" in harness.fake.answers()[0]["text"]
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_slack_stream_fallbacks_total", {"error": "not_allowed"}) == 1.0
    # The next question in that workspace goes straight to post-and-edit.
    await harness.slack.mention("in:product what is the API rate limit for Enterprise accounts?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    assert len([c for c in harness.fake.calls if c.method == "chat.startStream"]) == 1
    assert registry.get_sample_value("confer_slack_stream_fallbacks_total", {"error": "not_allowed"}) == 1.0


async def test_a_stream_refused_midway_carries_on_without_losing_the_answer(stream_harness: Harness) -> None:
    harness = stream_harness
    harness.backend.delays = {"people": 0.6}
    harness.fake.script("chat.appendStream", error="invalid_chunks")
    await harness.slack.mention("in:people,engineering how long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [status_ts] = harness.fake.status_messages()
    await harness.fake.wait_for(lambda: "Done in" in (harness.fake.updates(status_ts) or [""])[-1])
    assert "20 weeks" in harness.fake.answers()[0]["text"]
    assert all(s.stopped for s in harness.fake.streams.values())  # nothing left streaming
    registry = harness.server.metrics.registry
    assert (
        registry.get_sample_value("confer_slack_stream_fallbacks_total", {"error": "invalid_chunks"}) == 1.0
    )


async def test_a_429_on_an_append_is_waited_out_and_every_task_still_ends_final(
    stream_harness: Harness,
) -> None:
    harness = stream_harness
    harness.fake.script("chat.appendStream", status=429, retry_after=1)
    harness.backend.delays = {"engineering": 0.1, "security": 1.6}
    await harness.slack.mention("in:engineering,security who approves production access?")
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    stream = _one_stream(harness.fake)
    assert {t["status"] for t in stream.tasks().values()} == {"complete"}
    limited = [c for c in harness.fake.calls if c.method == "chat.appendStream" and c.status == 429]
    later = [c for c in harness.fake.calls if c.method.startswith("chat.") and c.at > limited[0].at]
    assert later and later[0].at - limited[0].at >= 0.9  # Retry-After: 1 was respected
    registry = harness.server.metrics.registry
    assert (
        registry.get_sample_value("confer_slack_rate_limited_total", {"method": "chat.appendStream"}) == 1.0
    )


async def test_an_answer_append_that_keeps_answering_429_gives_up_and_posts_the_answer(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model still writing suggestions: the answer's text is appended before the stream stops.
    An append that answers 429 every time is tried a bounded number of times, then the answer is
    posted as a message instead of the question hanging."""
    llm = await FakeLLM().start()
    llm.script("suggest", Reply(content=json.dumps({"questions": []}), delay=1.0))
    monkeypatch.setenv("LLM_BASE_URL", llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")

    def answer_text(params: dict[str, Any]) -> bool:
        return any(c.get("type") == "markdown_text" for c in params.get("chunks") or [])

    try:
        async with running_harness(sample_dir, monkeypatch) as harness:
            harness.fake.script(
                "chat.appendStream", status=429, retry_after=0.05, times=1000, when=answer_text
            )
            await harness.slack.mention("in:people how long is parental leave?")
            await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1, within=10)
            assert "20 weeks" in harness.fake.answers()[0]["text"]
            limited = [c for c in harness.fake.calls if c.status == 429]
            assert all(c.method == "chat.appendStream" for c in limited)
            # The closing append (the finished plan with the answer) is tried four times; before it,
            # the status writer's one append of a sentence as it was verified met a 429 too.
            closing = [
                c
                for c in limited
                if any(ch.get("type") == "plan_update" for ch in c.params.get("chunks") or [])
            ]
            assert len(closing) == 4 and len(limited) <= 5
            await harness.fake.wait_for(lambda: all(s.stopped for s in harness.fake.streams.values()))
    finally:
        await llm.stop()


def _visible_answers(harness: Harness, thread: str) -> int:
    """Answers a person sees in ``thread``: finished streams showing the answer, posted answers."""
    streamed = [s for s in harness.fake.finished_streams() if s.thread_ts == thread and "20 weeks" in s.text]
    posted = [a for a in harness.fake.answers() if a.get("thread_ts") == thread]
    return len(streamed) + len(posted)


@pytest.mark.parametrize(("drop", "times"), [("after", 1), ("before", 1), ("before", 2)])
async def test_a_connection_lost_at_the_stop_shows_the_answer_once_and_no_error(
    stream_harness: Harness, drop: str, times: int
) -> None:
    """``after``: Slack stopped the stream (the answer shows) and the connection broke before its
    answer came back; ``before``: the stop never reached Slack (twice: Slack cannot be asked)."""
    harness = stream_harness
    thread = "1700000400.000001"
    harness.fake.script("chat.stopStream", drop=drop, times=times)  # type: ignore[arg-type]
    await harness.slack.mention("in:people how long is parental leave?", ts=thread)
    await harness.fake.wait_for(lambda: _visible_answers(harness, thread) >= 1)
    await harness.server.scheduler.drain(5)
    assert _visible_answers(harness, thread) == 1
    assert all(s.stopped for s in harness.fake.streams.values())  # nothing left streaming
    said = [p["text"] for p in harness.fake.posts()] + [e["text"] for e in harness.fake.ephemerals()]
    assert not any(text in (messages.UNEXPECTED, messages.NOT_POSTED) for text in said)
    titles = [
        c["title"] for s in harness.fake.streams.values() for c in s.chunks if c["type"] == "plan_update"
    ]
    status_texts = titles + [u for ts in harness.fake.status_messages() for u in harness.fake.updates(ts)]
    assert not any(t.startswith("⚠️") for t in status_texts)


async def _reindex_product(harness: Harness, sample_dir: Path) -> None:
    """Index the samples' product collection again, after a test wrote a page into it."""
    from retrieval.collections import load_collections
    from retrieval.ingest.pipeline import index_collection

    config = load_collections(sample_dir / "collections.yaml")
    product = config.get("product")
    assert product is not None
    await index_collection(harness.backend, product, config)


async def test_nothing_in_any_chunk_can_ping_link_or_format(
    stream_harness: Harness, sample_dir: Path
) -> None:
    harness = stream_harness
    doc = sample_dir / "samples/product/escalation.md"
    doc.write_text(
        "---\ntitle: Escalation <!here> [x](https://evil.example)\nurl: javascript:alert(1)\n---\n"
        "# Escalation contacts\n\nFor escalation contacts, page <!channel> and <!here> "
        "and <@U999> in <#C777>, or tell @everyone; **details** at "
        "[click here](https://evil.example/phish) or https://evil.example now.\n"
    )
    await _reindex_product(harness, sample_dir)
    await harness.slack.mention("in:product who are the escalation contacts?")
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    stream = _one_stream(harness.fake)
    assert "escalation" in stream.text.lower()
    strings = stream.strings()
    for live in (
        "<!channel>",
        "<!here>",
        "<@U999>",
        "<#C777>",
        "@everyone",
        "https://evil",
    ):
        assert not any(live in s for s in strings), [s for s in strings if live in s]
    for markup in ("](http", "**details**"):  # markdown the answer's text must not carry through
        assert markup not in stream.text, markup
    for task in stream.tasks().values():
        for source in task.get("sources") or []:
            assert source["url"].startswith("https://docs.kestrel.example/"), source


async def test_a_command_an_answer_introduces_is_streamed_as_a_code_block_that_stays_inert(
    stream_harness: Harness, sample_dir: Path
) -> None:
    harness = stream_harness
    (sample_dir / "samples/product/firewall.md").write_text(
        "# Beacon agent firewall\n\n"
        "The Beacon agent reports shipments to the tracking service over port 8443.\n\n"
        "If you use ufw on the gateway, you can allow the agent port by running:\n\n"
        '```sh\nsudo ufw allow 8443 && echo "<!channel> ```` <@U999> *done*"\n```\n\n'
        "Other firewalls need a rule of their own.\n"
    )
    await _reindex_product(harness, sample_dir)
    await harness.slack.mention("in:product how do I allow the agent port with ufw?")
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    stream = _one_stream(harness.fake)
    ticks = ZERO_WIDTH.join("````")  # no run of backticks left to close the block early
    assert (
        "you can allow the agent port by running: \\[1\\]\n```\n"
        f'sudo ufw allow 8443 &amp;&amp; echo "&lt;!channel&gt; {ticks} &lt;@U999&gt; *done*"\n```\n'
    ) in stream.text, stream.text
    assert not any("<!channel>" in s or "<@U999>" in s for s in stream.strings())


@pytest.fixture
async def lying_llm() -> AsyncIterator[FakeLLM]:
    fake = await FakeLLM().start()
    fake.lie = "number"
    yield fake
    await fake.stop()


@pytest.fixture
async def llm_stream_harness(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch, lying_llm: FakeLLM
) -> AsyncIterator[Harness]:
    monkeypatch.setenv("LLM_BASE_URL", lying_llm.url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    async for running in _harness(sample_dir, monkeypatch):
        yield running


async def test_a_lying_model_never_gets_a_sentence_into_any_chunk(
    llm_stream_harness: Harness, lying_llm: FakeLLM
) -> None:
    harness = llm_stream_harness
    questions = (
        "How many weeks of parental leave are there?",
        "How many requests per second may each plan send?",
        "How many days of time off carry over to the next year?",
    )
    for n, question in enumerate(questions):
        await harness.slack.mention(question, ts=f"1700000100.{n:06d}")
    await harness.fake.wait_for(lambda: len(harness.fake.finished_streams()) == len(questions), within=60)
    assert lying_llm.lies  # the model did lie
    streamed = " ".join(
        " ".join(_readable(s).split()) for st in harness.fake.streams.values() for s in st.strings()
    )
    for lie in lying_llm.lies:
        assert " ".join(lie.rstrip(".").split()) not in streamed, lie
    assert all(st.text for st in harness.fake.streams.values())  # each got its verified answer


async def test_ask_streams_under_its_root_message_and_a_follow_up_streams_in_the_thread(
    stream_harness: Harness,
) -> None:
    harness = stream_harness
    await harness.slack.command("in:people How long is parental leave?")
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    [root] = harness.fake.posts()  # the only posted message: the question restated
    root_ts = "1700000000.000001"
    assert "thread_ts" not in root and _one_stream(harness.fake).thread_ts == root_ts
    assert "20 weeks" in _readable(_one_stream(harness.fake).text)
    await harness.slack.message("And can it be taken in blocks?", thread_ts=root_ts)
    await harness.fake.wait_for(lambda: len(harness.fake.finished_streams()) == 2)
    follow_up = harness.fake.finished_streams()[1]
    assert follow_up.thread_ts == root_ts and follow_up.recipient_user_id == "U0USER"
    assert "three blocks" in _readable(follow_up.text)
    assert len(harness.fake.posts()) == 1  # still one message per question


async def test_a_direct_message_outside_a_thread_is_answered_as_a_message(stream_harness: Harness) -> None:
    harness = stream_harness
    await harness.slack.message("How long is parental leave?", channel="D0DM", channel_type="im")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert harness.fake.streams == {}  # streams are thread replies; nothing was refused
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_slack_stream_fallbacks_total", {"error": "other"}) is None


async def test_a_follow_up_round_gets_its_own_task_which_ends_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.test_rounds import QUESTION, write_wiki

    config = write_wiki(tmp_path)
    async for harness in _harness(config.base_dir, monkeypatch):
        await harness.slack.mention(QUESTION, channel="C_PUBLIC")
        await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
        stream = _one_stream(harness.fake)
        tasks = stream.tasks()
        follow_ups = [t for t in tasks.values() if t["id"].startswith("followup-")]
        assert tasks["followup-1"]["title"] == "Following up: Delia Fontaine in People"  # the best lead
        # Each follow-up task ends final, after every first-round task was final.
        first_round_final = max(stream.final_at(t) or 0 for t in tasks if t.startswith("search-"))
        for task in follow_ups:
            assert stream.statuses(task["id"])[-1] in ("complete", "error")
            assert (stream.final_at(task["id"]) or 0) >= first_round_final
        assert "Virginia" in _readable(stream.text)


async def test_a_suggested_followup_is_streamed_to_the_person_who_clicked_it(stream_harness: Harness) -> None:
    harness = stream_harness
    await harness.slack.mention(
        "What is the rate limit for Growth accounts? in:product", ts="1700000001.000100"
    )
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    [suggested] = [
        b for b in _one_stream(harness.fake).blocks if b.get("block_id", "").startswith("suggest:")
    ]
    first = {k: v for k, v in suggested["elements"][0].items() if k != "text"}
    await harness.slack.act(
        {**first, "block_id": suggested["block_id"]}, thread_ts="1700000001.000100", user="U0OTHER"
    )
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake, 2))
    second = harness.fake.finished_streams()[1]
    # The follow-up is one more streamed reply in the same thread, to the person who clicked.
    assert (second.thread_ts, second.recipient_user_id) == ("1700000001.000100", "U0OTHER")
    assert "200 requests per second" in _readable(second.text)
    assert not harness.fake.ok_calls("chat.postMessage")


async def test_a_streamed_not_found_reply_ends_with_the_feedback_buttons(stream_harness: Harness) -> None:
    harness = stream_harness
    await harness.slack.mention("in:people where do I park my unicycle?", ts="1700000002.000100")
    await harness.fake.wait_for(functools.partial(_streams_done, harness.fake))
    stream = _one_stream(harness.fake)
    assert "I found nothing about that in People policies" in _readable(stream.text)
    feedback = [e for b in stream.blocks if b["type"] == "context_actions" for e in b["elements"]]
    assert [e["type"] for e in feedback] == ["feedback_buttons"]  # a wrong "not found" is worth a vote
