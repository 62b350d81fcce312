"""Slack end to end over real HTTP: signed requests into the real Bolt app, a fake Web API out."""

import asyncio
import json
import re
import time
from typing import Any

import pytest
from aiohttp import ClientSession
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.slack import surface as slack_surface
from retrieval.collections import ChannelPolicy
from tests.integration.conftest import Harness

CITATION = re.compile(r"\[(\d+)\]")


def _block_texts(blocks: list[dict[str, Any]]) -> list[str]:
    texts = []
    for block in blocks:
        if "text" in block:
            texts.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element.get("text"), str):
                texts.append(element["text"])
    return texts


def _sources(blocks: list[dict[str, Any]]) -> dict[int, str]:
    found = {}
    for block in blocks:
        if block["type"] != "context":
            continue
        for element in block["elements"]:
            match = re.match(r"\*\[(\d+)\]\* (.*)", element["text"])
            if match:
                found[int(match.group(1))] = match.group(2)
    return found


def _answer_markers(blocks: list[dict[str, Any]]) -> set[int]:
    return {int(n) for b in blocks if b["type"] == "section" for n in CITATION.findall(b["text"]["text"])}


async def test_mention_is_acked_before_the_work_and_answered_in_its_thread(harness: Harness) -> None:
    harness.backend.default_delay = 0.5  # research is still running when the ack comes back
    status, _ = await harness.slack.mention(
        "How do the engineering and security policies differ on production access?", ts="1700000001.000100"
    )
    assert status == 200
    assert harness.fake.answers() == []  # acked first, answered later
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [status_post, answer] = harness.fake.posts()
    assert status_post["thread_ts"] == answer["thread_ts"] == "1700000001.000100"
    assert answer["channel"] == "C0001" and answer["unfurl_links"] is False
    blocks = answer["blocks"]
    assert len(blocks) <= 50
    assert all(len(t) <= 3000 for t in _block_texts(blocks))
    sources = _sources(blocks)
    assert _answer_markers(blocks) == set(sources) and sources
    assert "Engineering handbook" in answer["text"] and "Security policy" in answer["text"]


async def test_bolt_reads_a_mention_after_its_ack_and_a_command_before_its_answer(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mention is acked from the first look at its body; Bolt's request is built in the work
    that runs after the ack. A command's ack carries Bolt's answer, so Bolt reads it at once."""
    built_in: list[str] = []  # the task that built each request Bolt was handed
    real = AsyncBoltRequest

    def bolt_request(**kwargs: Any) -> AsyncBoltRequest:
        task = asyncio.current_task()
        built_in.append(task.get_name() if task is not None else "")
        return real(**kwargs)

    monkeypatch.setattr(slack_surface, "AsyncBoltRequest", bolt_request)
    assert await harness.slack.mention("How long is parental leave?") == (200, "")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert built_in == ["confer-slack-event"]
    status, body = await harness.slack.command("help")
    assert status == 200 and "/ask" in body
    assert len(built_in) == 2 and built_in[1] != "confer-slack-event"


async def test_an_event_no_listener_takes_is_still_refused_by_bolt(harness: Harness) -> None:
    body = json.loads(harness.slack.mention_body("How long is parental leave?"))
    body["event"]["type"] = "reaction_added"  # Confer listens to mentions and messages only
    status, _ = await harness.slack.send(json.dumps(body), "application/json")
    assert status == 404  # as Bolt answers it: nothing here takes it
    status, body_text = await harness.slack.mention("How long is parental leave?")
    assert status == 200 and body_text == ""
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)


async def test_a_mention_acked_just_before_shutdown_is_still_answered(harness: Harness) -> None:
    status, _ = await harness.slack.mention("in:people how long is parental leave?", ts="1700000004.000400")
    assert status == 200
    assert await harness.server.stop() == 0  # acked, so Slack will not send it again: answered
    [answer] = harness.fake.answers()
    assert answer["thread_ts"] == "1700000004.000400" and "20 weeks" in answer["text"]
    assert harness.fake.ephemerals() == []


async def test_mention_inside_a_thread_answers_in_that_thread(harness: Harness) -> None:
    await harness.slack.mention(
        "How long is parental leave?", ts="1700000002.000200", thread_ts="1700000000.000001"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert {p["thread_ts"] for p in harness.fake.posts()} == {"1700000000.000001"}


async def test_status_edits_never_go_backwards_and_end_in_the_summary(harness: Harness) -> None:
    harness.backend.delays = {"engineering": 0.1, "security": 0.5, "people": 0.9, "product": 1.3}
    await harness.slack.mention("in:engineering,security,people,product what happens when a laptop is lost?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    status_ts = next(c.params["ts"] for c in harness.fake.ok_calls("chat.update"))
    await harness.fake.wait_for(lambda: "Done in" in harness.fake.updates(status_ts)[-1])
    edits = harness.fake.updates(status_ts)
    finished = [len(re.findall(r"^(✅|➖|⚠️|⏱️) ", e, re.MULTILINE)) for e in edits[:-1]]
    assert finished == sorted(finished), edits
    assert re.match(r"✅ Done in [\d.]+ s · 4 collections · \d+ sources?$", edits[-1])
    for title in ("Engineering handbook", "Security policy", "People policies", "Beacon product docs"):
        assert any(title in e for e in edits)
    # Coalesced: far fewer edits than one per event would give (2 per collection + plan).
    assert len(edits) < 9


async def test_the_same_event_delivered_three_times_is_answered_once(harness: Harness) -> None:
    body = harness.slack.mention_body("How long is parental leave?", event_id="EvSAME")
    for retry in (None, 1, 2):
        status, _ = await harness.slack.send(body, "application/json", retry_num=retry)
        assert status == 200
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    await harness.slack.mention("What is the rate limit for Growth accounts?")  # a later, different question
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    assert (
        sum("parental" in a["text"].lower() or "20 weeks" in a["text"] for a in harness.fake.answers()) == 1
    )
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_events_deduplicated_total") == 2.0


async def test_forged_or_stale_signatures_get_401_and_nothing_is_posted(harness: Harness) -> None:
    body = harness.slack.mention_body("How long is parental leave?")
    status, _ = await harness.slack.send(body, "application/json", signature="v0=" + "0" * 64)
    assert status == 401
    status, _ = await harness.slack.send(body, "application/json", timestamp=int(time.time()) - 600)
    assert status == 401
    await asyncio.sleep(0)  # let any wrongly scheduled work start
    assert harness.fake.posts() == []


async def test_a_429_on_a_status_edit_is_waited_out_and_the_final_state_lands(harness: Harness) -> None:
    harness.fake.script("chat.update", status=429, retry_after=1)
    harness.backend.delays = {"engineering": 0.1, "security": 0.4}
    await harness.slack.mention("in:engineering,security who approves production access?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    status_ts = next(c.params["ts"] for c in harness.fake.calls if c.method == "chat.update")
    await harness.fake.wait_for(
        lambda: bool(harness.fake.updates(status_ts)) and "Done in" in harness.fake.updates(status_ts)[-1]
    )
    limited = [c for c in harness.fake.calls if c.method == "chat.update" and c.status == 429]
    retried = [c for c in harness.fake.ok_calls("chat.update") if c.at > limited[0].at]
    assert retried[0].at - limited[0].at >= 0.9  # Retry-After: 1 was respected
    registry = harness.server.metrics.registry
    assert registry.get_sample_value("confer_slack_rate_limited_total", {"method": "chat.update"}) == 1.0


async def test_broadcasts_and_mentions_inside_documents_never_reach_slack(
    harness: Harness, sample_dir: Any
) -> None:
    doc = sample_dir / "samples/product/escalation.md"
    doc.write_text(
        "# Escalation contacts\n\nFor escalation contacts, page <!channel> and <!here> "
        "and <@U999> in <#C777>, "
        "or tell @everyone; details at <https://evil.example|click here> or https://evil.example/phish now.\n"
    )
    from retrieval.collections import load_collections
    from retrieval.ingest.pipeline import index_collection

    config = load_collections(sample_dir / "collections.yaml")
    product = config.get("product")
    assert product is not None
    await index_collection(harness.backend, product, config)
    await harness.slack.mention("in:product who are the escalation contacts?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    posted = " ".join(
        [str(p.get("text", "")) for p in harness.fake.posts()]
        + _block_texts(harness.fake.answers()[0]["blocks"])
    )
    assert "escalation" in posted.lower()
    for live in ("<!channel>", "<!here>", "<@U999>", "<#C777>", "<https://evil", "@everyone", "https://evil"):
        assert live not in posted, live
    links = re.findall(r"<(https?://[^|>]+)\|", posted)
    assert all(link.startswith("https://docs.kestrel.example/") for link in links)


async def test_slash_command_posts_a_root_message_and_threads_under_it(harness: Harness) -> None:
    status, body = await harness.slack.command("in:people How much is the home office budget?")
    assert status == 200 and body == ""
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    root, status_post, answer = harness.fake.posts()
    assert root["text"] == "<@U0USER> asked: How much is the home office budget?"
    assert "thread_ts" not in root and root["channel"] == "C0001"
    root_ts = "1700000000.000001"  # the fake's first ts: the root message
    assert status_post["thread_ts"] == answer["thread_ts"] == root_ts
    assert "1,000 euros" in answer["text"]


async def test_slash_command_help_and_list_are_ephemeral(harness: Harness) -> None:
    status, body = await harness.slack.command("help")
    reply = json.loads(body)
    assert status == 200 and reply["response_type"] == "ephemeral"
    assert "/ask [in:a,b] QUESTION" in reply["text"]
    status, body = await harness.slack.command("list")
    reply = json.loads(body)
    assert reply["response_type"] == "ephemeral"
    assert "`engineering`: Engineering handbook" in reply["text"] and "`product`" in reply["text"]
    assert harness.fake.posts() == []


async def test_forbidden_collection_gets_only_an_ephemeral_error(harness: Harness, sample_dir: Any) -> None:
    service = harness.server.service
    restricted = service.config.model_copy(update={"channels": {"CLOCKED": ChannelPolicy(allow=("people",))}})
    service.config = restricted
    status, body = await harness.slack.command("in:security what is the password policy?", channel="CLOCKED")
    reply = json.loads(body)
    assert status == 200 and reply["response_type"] == "ephemeral"
    assert (
        reply["text"]
        == "Sorry: this channel may not search 'security'. Collections you can use here: people."
    )
    status, _ = await harness.slack.mention("in:security what is the password policy?", channel="CLOCKED")
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("chat.postEphemeral")))
    [ephemeral] = harness.fake.ok_calls("chat.postEphemeral")
    assert "may not search 'security'" in ephemeral.params["text"]
    assert harness.fake.posts() == []
    assert not [s for s in harness.backend.searches if s[0] == "security"]


async def test_automatic_routing_never_searches_a_forbidden_collection(harness: Harness) -> None:
    service = harness.server.service
    policy = ChannelPolicy(allow=("people", "product"))
    service.config = service.config.model_copy(update={"channels": {"C0001": policy}})
    await harness.slack.mention("who approves production access and how long does it last?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert {name for name, _ in harness.backend.searches} <= {"people", "product"}


async def test_questions_beyond_the_limit_wait_in_a_queue_that_the_status_shows(harness: Harness) -> None:
    harness.server.scheduler._max = 1
    harness.backend.default_delay = 0.6
    await harness.slack.mention("in:people how long is parental leave?")
    await harness.slack.mention("in:product what is the rate limit for Growth accounts?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2, within=20)
    shown = [p["text"] for p in harness.fake.posts()] + [
        c.params["text"] for c in harness.fake.ok_calls("chat.update")
    ]
    assert any(t.startswith("⏳ Queued: 1 question ahead of yours.") for t in shown)  # what a status showed


async def test_shutdown_lets_running_questions_finish_or_says_they_were_interrupted(harness: Harness) -> None:
    harness.server.settings = harness.server.settings.model_copy(update={"shutdown_grace": 0.3})
    harness.backend.default_delay = 3.0
    await harness.slack.mention("in:people how long is parental leave?", ts="1700000003.000300")
    await harness.fake.wait_for(lambda: len(harness.fake.posts()) == 1)
    assert await harness.server.stop() == 1
    texts = [p["text"] for p in harness.fake.posts()]
    assert "I was interrupted before I could finish. Please ask again." in texts
    assert harness.fake.posts()[-1]["thread_ts"] == "1700000003.000300"


async def test_metrics_health_and_feedback(harness: Harness) -> None:
    await harness.slack.mention("How long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    status, _ = await harness.slack.click("feedback_up")
    assert status == 200
    async with harness.http.get(harness.base + "/metrics") as response:
        text = await response.text()
    for name in (
        "confer_questions_total",
        "confer_question_duration_seconds",
        "confer_ack_duration_seconds",
        "confer_subagent_duration_seconds",
        "confer_subagents_total",
        "confer_retrieval_duration_seconds",
        "confer_llm_requests_total",
        "confer_llm_duration_seconds",
        "confer_llm_tokens_total",
        "confer_slack_api_calls_total",
        "confer_slack_rate_limited_total",
        "confer_events_deduplicated_total",
        "confer_citations_dropped_total",
        "confer_questions_in_flight",
        "confer_feedback_total",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text or f"# TYPE {name}" in text, name
    assert 'confer_questions_total{outcome="answered",surface="mention"} 1.0' in text
    assert 'confer_feedback_total{vote="up"} 1.0' in text
    assert 'confer_slack_api_calls_total{method="chat.postMessage",outcome="ok"}' in text
    async with harness.http.get(harness.base + "/healthz") as response:
        assert response.status == 200
    async with harness.http.get(harness.base + "/readyz") as response:
        assert response.status == 200


async def test_slack_errors_are_retried_or_absorbed_without_crashing(harness: Harness) -> None:
    harness.fake.script("chat.postMessage", status=500)  # the status post: retried
    await harness.slack.mention("How long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    harness.fake.script("chat.postMessage", error="channel_not_found")
    await harness.slack.mention("How long is parental leave?")
    await harness.slack.mention("What is the rate limit for Growth accounts?")
    # Whichever post meets the error, the other question is answered (one whose status message
    # could not be posted is still answered, too).
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) >= 2)
    registry = harness.server.metrics.registry
    assert (
        registry.get_sample_value(
            "confer_slack_api_calls_total", {"method": "chat.postMessage", "outcome": "error"}
        )
        == 1.0
    )
    assert (
        registry.get_sample_value(
            "confer_slack_api_calls_total", {"method": "chat.postMessage", "outcome": "server_error"}
        )
        == 1.0
    )


async def test_socket_mode_receives_events_over_a_websocket_and_acks_them(
    sample_dir: Any, monkeypatch: Any
) -> None:
    from bot.server import build_server
    from bot.settings import load_settings
    from tests.fakes.slack_api import FakeSlackApi
    from tests.fakes.slack_client import SignedSlack
    from tests.integration.conftest import index_samples

    fake = await FakeSlackApi().start()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test-token")
    monkeypatch.setenv("CONFER_SLACK_PROGRESS", "edit")
    monkeypatch.setenv("SLACK_API_URL", fake.url)
    monkeypatch.setenv("CONFER_COLLECTIONS", str(sample_dir / "collections.yaml"))
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))  # not the checkout's .confer
    server = build_server(
        load_settings(env_file=None), backend=await index_samples(sample_dir), host="127.0.0.1"
    )
    server.port = 0
    await server.start()
    try:
        await fake.wait_for(lambda: fake.socket_connected)
        body = json.loads(
            SignedSlack(url="", secret="x", session=None).mention_body(  # type: ignore[arg-type]
                "How long is parental leave?", ts="1700000009.000900"
            )
        )
        await fake.push(
            {"envelope_id": "env-1", "type": "events_api", "accepts_response_payload": False, "payload": body}
        )
        await fake.wait_for(lambda: len(fake.answers()) == 1)
        assert any(ack.get("envelope_id") == "env-1" for ack in fake.socket_acks)
        assert fake.answers()[0]["thread_ts"] == "1700000009.000900"
        assert "20 weeks" in fake.answers()[0]["text"]
        assert any(c.method == "apps.connections.open" for c in fake.calls)
        async with ClientSession() as http:  # Socket Mode serves no HTTP events endpoint
            async with http.post(f"http://127.0.0.1:{server.port}/slack/events", data=b"{}") as response:
                assert response.status in (404, 405)
            async with http.get(f"http://127.0.0.1:{server.port}/healthz") as response:
                assert response.status == 200
    finally:
        await server.stop()
        await fake.stop()


async def test_shutdown_after_the_answer_is_posted_does_not_say_interrupted(harness: Harness) -> None:
    from bot.chat.ratelimit import RateBudget, Window

    assert harness.server.gateway is not None
    budget = RateBudget((Window(1, 60.0),))
    await budget.pause("T0001", 60.0)  # edits wait a minute
    harness.server.gateway.update_budget = budget
    harness.server.settings = harness.server.settings.model_copy(update={"shutdown_grace": 0.3})
    await harness.slack.mention("in:people how long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    await harness.server.stop()
    texts = [p["text"] for p in harness.fake.posts()]
    assert not any("interrupted" in t for t in texts)


async def test_confer_serve_process_stops_cleanly_on_sigterm(sample_dir: Any) -> None:
    import os
    import signal
    import socket
    import sys

    from tests.conftest import ROOT
    from tests.fakes.slack_api import FakeSlackApi

    fake = await FakeSlackApi().start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PORT": str(port),
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "a-real-looking-secret",
        "SLACK_API_URL": fake.url,
        "CONFER_COLLECTIONS": str(sample_dir / "collections.yaml"),
        "CONFER_DATA_DIR": str(sample_dir / ".confer"),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        env=env,
        cwd=sample_dir,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with ClientSession() as http:
            deadline = time.monotonic() + 30
            while True:
                try:
                    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                assert process.returncode is None, "serve exited during start"
                assert time.monotonic() < deadline, "serve did not start"
                await asyncio.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, err.decode()
        assert "Traceback" not in err.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()
        await fake.stop()


async def test_nothing_found_and_nothing_searchable_get_clear_replies(harness: Harness) -> None:
    await harness.slack.mention("in:product zyxwvut qwertyuiop")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [answer] = harness.fake.answers()
    assert answer["text"].startswith("I found nothing about that in Beacon product docs.")
    assert not [
        b for b in answer["blocks"] if b.get("block_id", "").startswith("suggest:")
    ]  # nothing to suggest
    harness.backend.failing = {"people"}
    await harness.slack.mention("in:people how long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    text = harness.fake.answers()[1]["text"]
    assert "No collection could be searched" in text and "People policies (search unavailable)" in text
    status_ts = harness.fake.status_messages()[1]
    await harness.fake.wait_for(lambda: "Done in" in (harness.fake.updates(status_ts) or [""])[-1])
    assert harness.fake.updates(status_ts)[-1].endswith("1 unavailable")


async def test_rejected_answer_blocks_are_posted_again_as_text(harness: Harness) -> None:
    harness.fake.script(
        "chat.postMessage", error="invalid_blocks", when=lambda params: bool(params.get("blocks")), times=2
    )
    await harness.slack.mention("How long is parental leave?", ts="1700000004.000400")
    await harness.fake.wait_for(lambda: any("20 weeks" in p["text"] for p in harness.fake.posts()))
    rejected = [c for c in harness.fake.calls if c.method == "chat.postMessage" and not c.response]
    assert len(rejected) == 2 and all(c.params.get("blocks") for c in rejected)  # with, then without 👍/👎
    posted = [p for p in harness.fake.posts() if "20 weeks" in p["text"]]
    assert len(posted) == 1 and "blocks" not in posted[0] and posted[0]["thread_ts"] == "1700000004.000400"
    status_ts = harness.fake.status_messages()[0]
    await harness.fake.wait_for(lambda: "Done in" in (harness.fake.updates(status_ts) or [""])[-1])


async def test_answer_blocks_refused_for_their_feedback_buttons_are_posted_without_them(
    harness: Harness,
) -> None:
    harness.fake.script(
        "chat.postMessage",
        error="invalid_blocks",
        when=lambda params: any(b["type"] == "context_actions" for b in params.get("blocks") or []),
    )
    await harness.slack.mention(
        "What is the rate limit for Growth accounts? in:product", ts="1700000005.000500"
    )
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    [answer] = harness.fake.answers()
    kinds = [b["type"] for b in answer["blocks"]]
    assert "context_actions" not in kinds and kinds[-1] == "actions"  # sources and suggestions stay
    assert any(b["type"] == "context" for b in answer["blocks"])


async def test_without_a_star_entry_dms_and_unlisted_channels_are_refused_privately(harness: Harness) -> None:
    service = harness.server.service
    service.config = service.config.model_copy(
        update={"channels": {"C0001": ChannelPolicy(allow=("people",)), "C0002": ChannelPolicy(allow=())}}
    )
    refusal = "Confer is not enabled in this conversation. You can ask me in <#C0001>."
    for place in ("D0DIRECT", "C0UNLISTED", "G0PRIVATE"):
        for text in ("in:security what is the password policy?", "what is the password policy?"):
            status, body = await harness.slack.command(text, channel=place)
            reply = json.loads(body)
            assert status == 200 and reply == {"response_type": "ephemeral", "text": refusal}
        status, body = await harness.slack.command("list", channel=place)
        assert json.loads(body)["text"] == refusal
    await harness.slack.mention("what is the password policy?", channel="C0UNLISTED")
    await harness.fake.wait_for(lambda: bool(harness.fake.ok_calls("chat.postEphemeral")))
    [ephemeral] = harness.fake.ok_calls("chat.postEphemeral")
    assert ephemeral.params["text"] == refusal and ephemeral.params["channel"] == "C0UNLISTED"
    await asyncio.sleep(0.2)  # let any wrongly scheduled research start
    assert harness.fake.posts() == [] and harness.backend.searches == []
    registry = harness.server.metrics.registry
    assert (
        registry.get_sample_value("confer_questions_total", {"surface": "command", "outcome": "rejected"})
        == 6
    )
    # The listed channel still works, within its own policy.
    await harness.slack.mention("how long is parental leave?", channel="C0001")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    assert {name for name, _ in harness.backend.searches} == {"people"}
