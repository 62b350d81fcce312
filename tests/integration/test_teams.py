"""Teams end to end over real HTTP: activities posted to ``/api/messages`` of the real server, replies
and edits recorded by a fake Bot Framework connector (the activities' ``serviceUrl``)."""

import base64
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import ClientSession
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt import PyJWK
from jwt.algorithms import RSAAlgorithm
from microsoft_agents.hosting.core.authorization import AgentAuthConfiguration, JwtTokenValidator

from bot import messages
from bot.server import ConferServer, build_server
from bot.settings import SettingsError, load_settings
from retrieval.collections import ChannelPolicy
from tests.fakes.backends import FaultyBackend
from tests.fakes.bot_connector import TENANT_ID, USER_ID, ConnectorCall, FakeBotConnector
from tests.fakes.llm_api import FakeLLM, Reply
from tests.integration.conftest import index_samples

CITATION = re.compile(r"\[(\d+)\]")
CHANNEL = "19:channel-1@thread.tacv2"
QUESTION_CONVERSATION = f"{CHANNEL};messageid=question-1"
APP_ID = "11111111-2222-3333-4444-555555555555"


@dataclass
class TeamsHarness:
    server: ConferServer
    connector: FakeBotConnector
    backend: FaultyBackend
    http: ClientSession

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/api/messages"

    async def post(self, activity: Any, headers: dict[str, str] | None = None) -> int:
        data = activity if isinstance(activity, bytes) else json.dumps(activity).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        async with self.http.post(self.url, data=data, headers=all_headers) as response:
            return response.status

    def answers(self) -> list[ConnectorCall]:
        return [c for c in self.connector.ok("reply") if c.card and "actions" in c.card]

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.server.metrics.registry.get_sample_value(name, labels or {}) or 0.0


async def _start(sample_dir: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> TeamsHarness:
    connector = await FakeBotConnector().start()
    monkeypatch.setenv("CONFER_COLLECTIONS", str(sample_dir / "collections.yaml"))
    monkeypatch.setenv("CONFER_DATA_DIR", str(sample_dir / ".confer"))
    monkeypatch.setenv("CONFER_SHUTDOWN_GRACE_SECONDS", "5")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    backend = FaultyBackend(await index_samples(sample_dir))
    server = build_server(load_settings(env_file=None), status_interval=0.2, backend=backend)
    server.port = 0
    await server.start()
    return TeamsHarness(server=server, connector=connector, backend=backend, http=ClientSession())


async def _stop(harness: TeamsHarness) -> None:
    await harness.http.close()
    if not harness.server._stopping:
        await harness.server.stop()
    await harness.connector.stop()


@pytest.fixture
async def teams(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TeamsHarness]:
    harness = await _start(sample_dir, monkeypatch, CONFER_TEAMS_LOCAL="true")
    yield harness
    await _stop(harness)


def _status_texts(call: ConnectorCall) -> str:
    return "\n".join(call.texts)


def _status_done(connector: FakeBotConnector) -> bool:
    """The last status edit that landed shows the final summary."""
    return any("Done in" in _status_texts(call) for call in connector.ok("update")[-1:])


def _sources(card: dict[str, Any]) -> dict[int, str]:
    found = {}
    for block in card["body"]:
        match = re.match(r"\[(\d+)\] (.*)", block.get("text", ""))
        if match and block.get("size") == "Small":
            found[int(match.group(1))] = match.group(2)
    return found


def _answer_markers(card: dict[str, Any]) -> set[int]:
    return {
        int(n)
        for block in card["body"]
        if block.get("size") != "Small"
        for n in CITATION.findall(block.get("text", ""))
    }


async def test_mention_gets_a_status_card_updated_per_collection_then_a_cited_answer_in_the_chain(
    teams: TeamsHarness,
) -> None:
    teams.backend.delays = {"engineering": 0.2, "security": 1.2}
    status = await teams.post(
        teams.connector.message("How do the engineering and security policies differ on production access?")
    )
    assert status == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    replies = teams.connector.ok("reply")
    status_post, answer = replies[0], teams.answers()[0]
    # Everything is a reply to the question, in its reply chain.
    assert all(r.conversation_id == QUESTION_CONVERSATION and r.activity_id == "question-1" for r in replies)
    assert status_post.card is not None and "actions" not in status_post.card
    # The status card is edited in place: one moment shows engineering done, security still searching.
    await teams.connector.wait_for(lambda: _status_done(teams.connector))
    updates = teams.connector.ok("update")
    assert {u.activity_id for u in updates} == {status_post.created_id}
    assert any(
        re.search(r"Engineering handbook: done, \d+ sources?", _status_texts(u))
        and "Security policy: searching" in _status_texts(u)
        for u in updates
    ), [_status_texts(u) for u in updates]
    assert "Done in" in _status_texts(updates[-1]) and "2 collections" in _status_texts(updates[-1])
    # The answer: [n] markers, each with exactly one source, linked to the source's own URL.
    card = answer.card
    assert card is not None
    sources = _sources(card)
    assert sources and _answer_markers(card) == set(sources)
    texts = " ".join(answer.texts)
    assert "Engineering handbook" in texts and "Security policy" in texts
    links = re.findall(r"\]\((https?://[^)]+)\)", texts)  # the samples carry no URLs: titles and paths
    assert all(link.startswith("https://docs.kestrel.example/") for link in links)
    assert "(samples/engineering/production-access.md)" in texts
    assert [a["title"] for a in card["actions"]][:2] == ["👍 Helpful", "👎 Not helpful"]
    assert teams.metric("confer_questions_total", {"surface": "teams", "outcome": "answered"}) == 1.0
    assert teams.metric("confer_teams_api_calls_total", {"method": "reply", "outcome": "ok"}) == 2.0


async def test_the_same_activity_delivered_twice_is_answered_once(teams: TeamsHarness) -> None:
    activity = teams.connector.message("in:people how long is parental leave?")
    assert await teams.post(activity) == 202
    assert await teams.post(activity) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    await teams.server.scheduler.drain(5)
    assert len(teams.answers()) == 1
    assert "20 weeks" in " ".join(teams.answers()[0].texts)
    assert teams.metric("confer_events_deduplicated_total") == 1.0


async def test_a_forbidden_collection_gets_a_private_error_and_nothing_is_searched(
    teams: TeamsHarness,
) -> None:
    service = teams.server.service
    policy = ChannelPolicy(allow=("people",))
    service.config = service.config.model_copy(update={"channels": {CHANNEL: policy}})
    await teams.post(teams.connector.message("in:security what is the password policy?"))
    await teams.connector.wait_for(lambda: bool(teams.connector.ok("send")))
    [created] = teams.connector.ok("create_conversation")
    assert created.body["members"] == [{"id": USER_ID}] and created.body["isGroup"] is False
    [private] = teams.connector.ok("send")
    assert private.conversation_id == created.created_id
    assert private.body["text"] == (
        "Sorry: this channel may not search 'security'. Collections you can use here: people."
    )
    assert teams.connector.ok("reply") == []  # nothing in the channel
    assert teams.backend.searches == []
    assert teams.metric("confer_questions_total", {"surface": "teams", "outcome": "rejected"}) == 1.0


async def _reindex_product(teams: TeamsHarness, sample_dir: Path) -> None:
    """The samples' product collection indexed again, with what a test wrote into it."""
    from retrieval.collections import load_collections
    from retrieval.ingest.pipeline import index_collection

    config = load_collections(sample_dir / "collections.yaml")
    product = config.get("product")
    assert product is not None
    await index_collection(teams.backend, product, config)


async def test_mentions_links_and_markup_inside_documents_never_go_live(
    teams: TeamsHarness, sample_dir: Path
) -> None:
    doc = sample_dir / "samples/product/escalation.md"
    doc.write_text(
        '# Escalation contacts\n\nFor escalation contacts, ping <at>Everyone</at> and <at id="0">Ada</at>, '
        "see [the escalation page](https://evil.example/phish) or https://evil.example/x or "
        "www.evil.example, **urgent** {{DATE(2026-01-01T00:00:00Z)}} <b>bold</b> now.\n"
    )
    await _reindex_product(teams, sample_dir)
    await teams.post(teams.connector.message("in:product who are the escalation contacts?"))
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    posted = " ".join(text for call in teams.connector.calls for text in call.texts)
    assert "escalation" in posted.lower()
    assert not re.search(r"(?<!\\)<at", posted)  # no live mention tag
    assert not re.search(r"(?<!\\)<b>", posted)
    assert "https://evil" not in posted and "www.evil" not in posted and "{{DATE" not in posted
    assert not re.search(r"(?<!\\)\*\*urgent", posted)
    links = re.findall(r"(?<!\\)\]\(([^)]*)\)", posted)
    # The only links allowed are sources' own URLs (a sample page's canonical address).
    assert all(link.startswith("https://docs.kestrel.example/") for link in links)
    for call in teams.connector.calls:  # no mention entities anywhere
        assert not call.body.get("entities") and not (call.card or {}).get("msteams", {}).get("entities")


async def test_a_command_an_answer_introduces_shows_as_monospace_lines_that_stay_inert(
    teams: TeamsHarness, sample_dir: Path
) -> None:
    (sample_dir / "samples/product/firewall.md").write_text(
        "# Beacon agent firewall\n\n"
        "The Beacon agent reports shipments to the tracking service over port 8443.\n\n"
        "If you use ufw on the gateway, you can allow the agent port by running:\n\n"
        "```sh\nsudo ufw allow 8443\n"
        'echo "<at>Everyone</at> ``` [x](https://evil.example) **done**"\n```\n\n'
        "Other firewalls need a rule of their own.\n"
    )
    await _reindex_product(teams, sample_dir)
    await teams.post(teams.connector.message("in:product how do I allow the agent port with ufw?"))
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    body = card["body"]
    at = next(
        n for n, b in enumerate(body) if b["text"].endswith("you can allow the agent port by running: [1]")
    )
    code = body[at + 1 : at + 3]
    assert [b["text"] for b in code] == [
        "sudo ufw allow 8443",
        'echo "\\<at\\>Everyone\\</at\\> \\`\\`\\` \\[x\\](https\u200b://evil.example) \\*\\*done\\*\\*"',
    ]
    assert all(b["type"] == "TextBlock" and b["fontType"] == "Monospace" and b["wrap"] for b in code)
    assert body[at + 3].get("fontType") is None  # the answer goes on after the code


async def test_malformed_activities_get_400_and_nothing_is_posted(teams: TeamsHarness) -> None:
    assert await teams.post(b"{not json") == 400
    assert await teams.post([1, 2]) == 400
    assert await teams.post({"type": "message", "id": "x"}) == 400  # no conversation
    no_sender = teams.connector.message("hello there")
    del no_sender["from"]
    assert await teams.post(no_sender) == 400
    elsewhere = teams.connector.message("how long is parental leave?")
    elsewhere["serviceUrl"] = "https://smba.trafficmanager.net/teams/"
    assert await teams.post(elsewhere) == 400  # local mode replies only to this machine
    await teams.server.scheduler.drain(2)
    assert teams.connector.calls == []


async def test_personal_chats_need_no_mention_and_group_messages_without_one_are_ignored(
    teams: TeamsHarness,
) -> None:
    await teams.post(
        teams.connector.message(
            "how long is parental leave?",
            activity_id="dm-1",
            conversation_id="a:personal-1",
            conversation_type="personal",
            mention=False,
        )
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    assert teams.answers()[0].conversation_id == "a:personal-1"
    await teams.post(
        teams.connector.message(
            "how long is parental leave?",
            activity_id="group-1",
            conversation_id="19:group@thread.v2",
            conversation_type="groupChat",
            mention=False,
        )
    )
    await teams.server.scheduler.drain(5)
    assert [c.conversation_id for c in teams.connector.calls if c.method == "reply"].count(
        "19:group@thread.v2"
    ) == 0


async def test_help_and_list_reply_in_the_chain(teams: TeamsHarness) -> None:
    await teams.post(teams.connector.message("help", activity_id="help-1"))
    await teams.post(teams.connector.message("list", activity_id="list-1"))
    await teams.connector.wait_for(lambda: len(teams.connector.ok("reply")) == 2)
    by_question = {c.activity_id: c.body["text"] for c in teams.connector.ok("reply")}
    assert "`in:a,b`" in by_question["help-1"]
    assert "`engineering`: Engineering handbook" in by_question["list-1"]


async def test_a_429_on_a_status_edit_is_waited_out_and_the_final_state_lands(teams: TeamsHarness) -> None:
    teams.backend.delays = {"engineering": 0.1, "security": 0.6}
    teams.connector.script("update", status=429, retry_after=1)
    teams.connector.script("update", status=412)
    await teams.post(teams.connector.message("in:engineering,security who approves production access?"))
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    await teams.connector.wait_for(lambda: _status_done(teams.connector))
    limited = [c for c in teams.connector.calls if c.method == "update" and c.status == 429]
    after = [c for c in teams.connector.calls if c.method == "update" and c.at > limited[0].at]
    assert after[0].at - limited[0].at >= 0.9  # Retry-After: 1 was respected
    assert teams.metric("confer_teams_rate_limited_total", {"method": "update"}) == 1.0
    assert teams.metric("confer_teams_api_calls_total", {"method": "update", "outcome": "retry_412"}) == 1.0


async def test_questions_beyond_the_limit_wait_in_a_queue_that_the_status_card_shows(
    teams: TeamsHarness,
) -> None:
    teams.server.scheduler._max = 1
    teams.backend.default_delay = 0.6
    await teams.post(teams.connector.message("in:people how long is parental leave?", activity_id="q-1"))
    await teams.post(
        teams.connector.message("in:product what is the rate limit for Growth accounts?", activity_id="q-2")
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 2)
    second = [c for c in teams.connector.ok("reply") if c.activity_id == "q-2" and c.card]
    assert _status_texts(second[0]) == "⏳ Queued: 1 question ahead of yours."
    assert {a.activity_id for a in teams.answers()} == {"q-1", "q-2"}


async def test_shutdown_says_in_the_chain_that_a_running_question_was_interrupted(
    teams: TeamsHarness,
) -> None:
    teams.server.settings = teams.server.settings.model_copy(update={"shutdown_grace": 0.3})
    teams.backend.default_delay = 3.0
    await teams.post(teams.connector.message("in:people how long is parental leave?"))
    await teams.connector.wait_for(lambda: len(teams.connector.ok("reply")) == 1)  # the status card
    assert await teams.server.stop() == 1
    said = [c for c in teams.connector.ok("reply") if c.body.get("text")]
    assert [c.body["text"] for c in said] == ["I was interrupted before I could finish. Please ask again."]
    assert said[0].conversation_id == QUESTION_CONVERSATION and said[0].activity_id == "question-1"
    assert "Interrupted" in _status_texts(teams.connector.ok("update")[-1])
    assert teams.answers() == []


async def test_feedback_buttons_are_counted(teams: TeamsHarness) -> None:
    vote = teams.connector.message(
        "", activity_id="vote-1", mention=False, value={"confer_feedback": "up", "answer": "abc"}
    )
    assert await teams.post(vote) == 202
    assert await teams.post(vote) == 202  # a repeated delivery counts once
    assert teams.metric("confer_feedback_total", {"vote": "up"}) == 1.0
    assert teams.server.feedback is not None
    [stored] = await teams.server.feedback.votes()  # an answer no record is kept of: known by its place
    assert (stored.question_id, stored.platform, stored.channel, stored.answer) == (
        "abc",
        "teams",
        CHANNEL,
        "",
    )


async def test_a_vote_on_an_answer_card_is_kept_with_the_answer_and_thanked_privately(
    teams: TeamsHarness,
) -> None:
    assert await teams.post(teams.connector.message("How long is parental leave? in:people")) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    [form] = [a["card"] for a in card["actions"] if a["type"] == "Action.ShowCard"]
    down = form["actions"][0]["data"]  # what Send carries, with the form's inputs merged in
    hostile = "Changed\x1b]0;pwned\x07\x1b[2J in May.\u202e"  # a terminal's escapes, an override
    value = {**down, "confer_reason": "outdated", "confer_comment": hostile}
    vote = teams.connector.message("", activity_id="vote-2", mention=False, value=value)
    assert await teams.post(vote) == 202
    await teams.connector.wait_for(lambda: bool(teams.connector.ok("create_conversation")))
    assert teams.server.feedback is not None
    [stored] = await teams.server.feedback.votes()
    assert (stored.vote, stored.question_id, stored.platform) == ("down", down["answer"], "teams")
    assert (stored.reason, stored.comment) == ("outdated", "Changed]0;pwned[2J in May.")  # inert text
    assert "20 weeks" in stored.answer and stored.collections == ("people",) and stored.passage_ids
    await teams.connector.wait_for(lambda: any(c.body.get("text") for c in teams.connector.ok("send")))
    thanks = [c.body["text"] for c in teams.connector.ok("send") if c.body.get("text")]
    assert thanks == [messages.FEEDBACK_REASON_THANKS]  # in a one-to-one chat with the voter only


async def test_a_not_found_card_has_feedback_buttons_and_a_vote_on_it_is_kept(teams: TeamsHarness) -> None:
    assert await teams.post(teams.connector.message("Where do I park my unicycle? in:people")) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    assert messages.NOTHING_FOUND.split("{")[0] in json.dumps(card)
    actions = card.get("actions", [])
    assert [a["title"] for a in actions if a["type"] in ("Action.Submit", "Action.ShowCard")][:2] == [
        messages.TEAMS_FEEDBACK_UP,
        messages.TEAMS_FEEDBACK_DOWN,
    ]
    [form] = [a["card"] for a in actions if a["type"] == "Action.ShowCard"]
    value = {**form["actions"][0]["data"], "confer_reason": "wrong", "confer_comment": ""}
    assert (
        await teams.post(teams.connector.message("", activity_id="vote-3", mention=False, value=value)) == 202
    )
    await teams.connector.wait_for(lambda: bool(teams.connector.ok("create_conversation")))
    assert teams.server.feedback is not None
    [stored] = await teams.server.feedback.votes()
    assert (stored.vote, stored.reason, stored.question_id) == ("down", "wrong", value["answer"])
    assert messages.NOTHING_FOUND.split("{")[0] in stored.answer and stored.collections == ("people",)


async def test_a_suggested_followup_on_a_card_is_asked_in_the_reply_chain(teams: TeamsHarness) -> None:
    question = "What is the rate limit for Growth accounts? in:product"
    assert await teams.post(teams.connector.message(question)) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    card = teams.answers()[0].card
    assert card is not None
    [ask, *_] = [a["data"] for a in card["actions"] if "confer_ask" in a.get("data", {})]
    assert ask == {"confer_ask": "What is the rate limit for Enterprise accounts?"}
    click = teams.connector.message("", activity_id="click-1", mention=False, value=ask)
    assert await teams.post(click) == 202
    await teams.connector.wait_for(lambda: len(teams.answers()) == 2)
    second = teams.answers()[1]
    assert second.conversation_id == QUESTION_CONVERSATION
    assert "200 requests per second" in " ".join(second.texts)
    again = teams.connector.message("", activity_id="click-2", mention=False, value=ask)
    assert await teams.post(again) == 202  # another click on it: told privately, not asked again
    await teams.connector.wait_for(lambda: any(c.body.get("text") for c in teams.connector.ok("send")))
    told = [c.body["text"] for c in teams.connector.ok("send") if c.body.get("text")]
    assert told == [messages.SUGGESTION_ALREADY_ASKED]
    assert len(teams.answers()) == 2


def _token(payload: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.{part({'sig': 'forged'})}"


async def test_with_credentials_a_missing_or_bad_token_gets_401_and_nothing_is_posted(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__"
    harness = await _start(
        sample_dir,
        monkeypatch,
        **{
            f"{prefix}CLIENTID": "11111111-2222-3333-4444-555555555555",
            f"{prefix}CLIENTSECRET": "a-test-client-secret-value",
            f"{prefix}TENANTID": "00000000-0000-0000-0000-0000000000aa",
        },
    )
    try:
        activity = harness.connector.message("how long is parental leave?")
        forged = _token(
            {"iss": "https://api.botframework.com", "aud": "11111111-2222-3333-4444-555555555555"}
        )
        assert await harness.post(activity) == 401
        assert await harness.post(activity, {"Authorization": "Bearer not-a-jwt"}) == 401
        assert await harness.post(activity, {"Authorization": f"Bearer {forged}"}) == 401
        assert await harness.post(activity, {"Authorization": "Basic dXNlcjpwYXNz"}) == 401
        await harness.server.scheduler.drain(2)
        assert harness.connector.calls == []
        assert harness.backend.searches == []
    finally:
        await _stop(harness)


class LocalKeyValidator(JwtTokenValidator):  # type: ignore[misc]  # an untyped package
    """The SDK's validator (signature, lifetime, audience) with Microsoft's signing-key endpoint
    replaced by a local key: the one boundary a test on this machine cannot reach."""

    def __init__(self, configuration: AgentAuthConfiguration, key: PyJWK) -> None:
        super().__init__(configuration)
        self._key = key

    async def _get_public_key_or_secret(self, token: str) -> PyJWK:
        return self._key


def _signing_key() -> tuple[rsa.RSAPrivateKey, PyJWK]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    return private, PyJWK.from_dict({**public, "alg": "RS256", "kid": "test"})


def _bearer(private: rsa.RSAPrivateKey, **claims: Any) -> dict[str, str]:
    now = int(time.time())
    payload = {"iss": "https://api.botframework.com", "aud": APP_ID, "nbf": now, "exp": now + 600, **claims}
    return {
        "Authorization": "Bearer " + jwt.encode(payload, private, algorithm="RS256", headers={"kid": "test"})
    }


async def test_a_valid_token_is_accepted_only_for_its_own_service_url_and_the_configured_tenant(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token replayed with another ``serviceUrl`` would make Confer send its replies, with its own
    credentials, wherever the activity says: the token's ``serviceurl`` claim must match, and the
    activity must come from the tenant Confer is configured for."""
    prefix = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__"
    harness = await _start(
        sample_dir,
        monkeypatch,
        **{
            f"{prefix}CLIENTID": APP_ID,
            f"{prefix}CLIENTSECRET": "a-test-client-secret-value",
            f"{prefix}TENANTID": TENANT_ID,
        },
    )
    teams = harness.server.teams
    assert teams is not None and teams.auth is not None
    private, public = _signing_key()
    teams.validator = LocalKeyValidator(teams.auth, public)
    try:
        quiet = harness.connector.message("hello", mention=False)  # in a channel, to nobody: no reply
        token = _bearer(private, serviceurl=harness.connector.url)
        assert await harness.post(quiet, token) == 202  # verified and bound: accepted
        assert await harness.post(quiet, _bearer(private, serviceurl="https://attacker.example/")) == 401
        assert await harness.post(quiet, _bearer(private)) == 401  # no serviceurl claim
        other = "00000000-0000-0000-0000-0000000000bb"
        elsewhere = {
            **quiet,
            "conversation": {**quiet["conversation"], "tenantId": other},
            "channelData": {"tenant": {"id": other}},
        }
        assert await harness.post(elsewhere, token) == 401
        untold = {
            **quiet,
            "conversation": {k: v for k, v in quiet["conversation"].items() if k != "tenantId"},
        }
        untold.pop("channelData")
        assert await harness.post(untold, token) == 401
        replayed = {
            **harness.connector.message("how long is parental leave?"),
            "serviceUrl": "https://attacker.example/",
        }
        assert await harness.post(replayed, token) == 401
        await harness.server.scheduler.drain(2)
        assert harness.connector.calls == []
        assert harness.backend.searches == []
    finally:
        await _stop(harness)


def test_local_mode_refuses_credentials_and_other_interfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFER_TEAMS_LOCAL", "true")
    monkeypatch.setenv("CONFER_HOST", "0.0.0.0")
    with pytest.raises(SettingsError, match="CONFER_HOST"):
        load_settings(env_file=None)
    monkeypatch.setenv("CONFER_HOST", "127.0.0.1")
    monkeypatch.setenv(
        "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID", "11111111-2222-3333-4444-555555555555"
    )
    with pytest.raises(SettingsError) as error:
        load_settings(env_file=None)
    assert "set them all, or none" in str(error.value)
    monkeypatch.delenv("CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID")
    monkeypatch.delenv("CONFER_HOST")
    assert load_settings(env_file=None).listen_host == "127.0.0.1"


async def test_personal_chat_and_reply_chain_followups_use_the_earlier_turn(teams: TeamsHarness) -> None:
    chat: dict[str, Any] = {
        "conversation_id": "a:personal-memory",
        "conversation_type": "personal",
        "mention": False,
    }
    await teams.post(
        teams.connector.message("how long is parental leave? in:people", activity_id="m-1", **chat)
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    await teams.post(teams.connector.message("and can it be taken in blocks?", activity_id="m-2", **chat))
    await teams.connector.wait_for(lambda: len(teams.answers()) == 2)
    assert "three blocks" in "\n".join(teams.answers()[1].texts)
    chain = f"{CHANNEL};messageid=memory-1"
    await teams.post(
        teams.connector.message("how long is parental leave?", activity_id="c-1", conversation_id=chain)
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 3)
    await teams.post(
        teams.connector.message("can it be taken in blocks?", activity_id="c-2", conversation_id=chain)
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 4)
    assert "three blocks" in "\n".join(teams.answers()[3].texts)


async def test_a_slow_models_suggestions_are_added_to_the_posted_card(
    sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = await FakeLLM().start()
    question = json.dumps({"questions": ["Can parental leave be taken in blocks?"]})
    llm.script("suggest", Reply(content=question, delay=3.0))
    teams = await _start(
        sample_dir,
        monkeypatch,
        CONFER_TEAMS_LOCAL="true",
        LLM_BASE_URL=llm.url,
        LLM_API_KEY="sk-test",
        LLM_MODEL="fake-model",
    )
    try:
        assert await teams.post(teams.connector.message("How long is parental leave? in:people")) == 202
        await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
        [answer] = teams.answers()
        assert answer.card is not None and not [
            a for a in answer.card["actions"] if "confer_ask" in a.get("data", {})
        ]
        await teams.connector.wait_for(
            lambda: any(u.activity_id == answer.created_id for u in teams.connector.ok("update")), within=30
        )
        [edit] = [u for u in teams.connector.ok("update") if u.activity_id == answer.created_id]
        assert edit.card is not None
        asks = [a["data"]["confer_ask"] for a in edit.card["actions"] if "confer_ask" in a.get("data", {})]
        assert asks == ["Can parental leave be taken in blocks?"]
        assert "20 weeks" in " ".join(edit.texts)
    finally:
        await _stop(teams)
        await llm.stop()


async def test_the_status_card_is_final_before_the_answer_and_keeps_how_a_follow_up_was_read(
    teams: TeamsHarness,
) -> None:
    """A status edit coalesced behind the interval used to land after the answer: for that moment
    the card said "searching…" above a finished answer, and its final version dropped the
    "Searching: …" line that shows how a follow-up was read."""
    assert teams.server.teams is not None
    teams.server.teams.status_interval = 1.0  # the last branch finishes well inside the interval
    teams.backend.delays = {"people": 0.3}
    chat: dict[str, Any] = {"conversation_id": "a:personal-status", "conversation_type": "personal"}
    await teams.post(
        teams.connector.message("how long is parental leave? in:people", activity_id="s-1", **chat)
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 1)
    await teams.post(
        teams.connector.message("and can it be taken in blocks?", activity_id="s-2", mention=False, **chat)
    )
    await teams.connector.wait_for(lambda: len(teams.answers()) == 2)
    for question, answer in zip(("s-1", "s-2"), teams.answers(), strict=True):
        [status] = [
            c for c in teams.connector.ok("reply") if c.activity_id == question and c.card and c is not answer
        ]
        shown = [status, *(c for c in teams.connector.ok("update") if c.activity_id == status.created_id)]
        before = [c for c in shown if c.at <= answer.at]
        assert "Done in" in _status_texts(before[-1]), [_status_texts(c) for c in shown]
        assert messages.STATUS_SEARCHING not in _status_texts(before[-1])
    assert _status_texts(before[-1]).splitlines()[1] == "Searching: can parental leave be taken in blocks?"
