"""A fake Bot Framework connector (the ``serviceUrl`` of an activity) on 127.0.0.1.

Records every activity sent, replied and updated; can be told to answer 429 (with ``Retry-After``),
412, 502, 504 or an error Teams documents (403 ``BotNotInConversationRoster``…) for a method, once,
a number of times or throughout, in every conversation or one; to drop the connection before or
after applying a call, or to answer late after applying it; and builds the incoming activities
Teams would post to a bot. A conversation's members (``roster``) are answered as Teams answers a bot's
``GET /v3/conversations/{id}/members`` and ``…/members/{memberId}``, with each person's Entra user
principal name and email:
https://learn.microsoft.com/en-us/microsoftteams/platform/bots/how-to/get-teams-context#fetch-the-roster-or-user-profile
Status codes as Teams documents them for the bot APIs:
https://learn.microsoft.com/en-us/microsoftteams/platform/bots/build-conversational-capability#status-codes-from-bot-conversational-apis
(429, 412, 502 and 504 are to be retried, after ``Retry-After`` where given:
https://learn.microsoft.com/en-us/microsoftteams/platform/bots/how-to/rate-limit).
"""

import asyncio
import itertools
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests.fakes.server import serve_locally

Method = Literal["reply", "send", "update", "create_conversation"]
Drop = Literal["before", "after"]
# The error body Teams answers with per status (code as the status-codes table above names it).
ERROR_CODES = {
    403: "BotNotInConversationRoster",
    404: "ConversationNotFound",
    412: "PreconditionFailed",
    429: "Throttled",
    502: "ServiceError",
    504: "GatewayTimeout",
}


@dataclass
class Scripted:
    status: int = 200
    retry_after: float | None = None
    conversation: str | None = None  # only calls in this conversation (its reply chains included)
    always: bool = False
    drop: Drop | None = None
    late: float = 0.0  # applied at once, answered this many seconds later

    def matches(self, conversation_id: str) -> bool:
        return self.conversation is None or conversation_id.split(";", 1)[0] == self.conversation


BOT_ID = "28:confer-bot"
USER_ID = "29:user-1"
TENANT_ID = "00000000-0000-0000-0000-0000000000aa"


@dataclass(frozen=True)
class ConnectorCall:
    method: Method
    conversation_id: str
    activity_id: str  # the activity replied to (reply) or replaced (update); "" otherwise
    body: dict[str, Any]
    status: int
    at: float
    created_id: str = ""
    authorization: str = ""

    @property
    def card(self) -> dict[str, Any] | None:
        for attachment in self.body.get("attachments") or []:
            if attachment.get("contentType") == "application/vnd.microsoft.card.adaptive":
                content: dict[str, Any] = attachment["content"]
                return content
        return None

    @property
    def texts(self) -> list[str]:
        """Every piece of text a person would read in this activity."""
        found = [self.body["text"]] if self.body.get("text") else []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key in ("text", "title"):
                    if isinstance(node.get(key), str):
                        found.append(node[key])
                for value in node.values():
                    if isinstance(value, dict | list):
                        walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        walk(self.card)
        return found


def _drop(request: web.Request) -> web.Response:
    """Reset the client's connection (a network failure between it and the connector)."""
    if request.transport is not None:
        request.transport.abort()
    return web.Response(status=500)  # never written: the connection is gone


@dataclass
class FakeBotConnector:
    calls: list[ConnectorCall] = field(default_factory=list)
    url: str = ""
    _scripts: dict[str, deque[Scripted]] = field(default_factory=lambda: defaultdict(deque))
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    # conversation id (without ;messageid=) -> user id -> (user principal name, email)
    roster: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)  # every roster request's path

    def script(
        self,
        method: Method,
        *,
        status: int = 200,
        retry_after: float | None = None,
        times: int = 1,
        conversation: str | None = None,
        always: bool = False,
        drop: Drop | None = None,
        late: float = 0.0,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (every one with ``always``), in
        ``conversation`` when given, as told."""
        for _ in range(1 if always else times):
            self._scripts[method].append(
                Scripted(status, retry_after, conversation, always, drop=drop, late=late)
            )

    def heal(self) -> None:
        """Teams recovers: every fault still scripted is dropped."""
        self._scripts.clear()

    def _take(self, method: str, conversation_id: str) -> Scripted | None:
        for scripted in self._scripts[method]:
            if scripted.matches(conversation_id):
                if not scripted.always:
                    self._scripts[method].remove(scripted)
                return scripted
        return None

    async def start(self) -> "FakeBotConnector":
        app = web.Application()
        app.router.add_post("/v3/conversations", self._create)
        app.router.add_post("/v3/conversations/{cid}/activities", self._send)
        app.router.add_post("/v3/conversations/{cid}/activities/{aid}", self._reply)
        app.router.add_put("/v3/conversations/{cid}/activities/{aid}", self._update)
        app.router.add_get("/v3/conversations/{cid}/members", self._members)
        app.router.add_get("/v3/conversations/{cid}/members/{mid}", self._member)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}/"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _record(
        self, method: Method, request: web.Request, conversation_id: str, activity_id: str
    ) -> web.Response:
        body = await request.json()
        scripted = self._take(method, conversation_id)
        if scripted is not None and scripted.drop == "before":  # never applied, and no answer
            self._append(method, request, conversation_id, activity_id, body, 0, "")
            return _drop(request)
        failing = scripted is not None and scripted.drop is None and scripted.status != 200
        created = "" if failing or method == "update" else f"activity-{next(self._ids)}"
        if method == "create_conversation" and not failing:
            created = f"a:private-{body['members'][0]['id']}"
        status = scripted.status if failing and scripted is not None else 200
        self._append(method, request, conversation_id, activity_id, body, status, created)
        if scripted is not None and scripted.drop == "after":  # applied, the answer never comes back
            return _drop(request)
        if scripted is not None and scripted.late:
            await asyncio.sleep(scripted.late)
        if failing and scripted is not None:
            retry = scripted.retry_after
            headers = {"Retry-After": f"{retry:g}"} if retry is not None else {}
            error = {"code": ERROR_CODES.get(status, "ServiceError"), "message": "scripted"}
            return web.json_response({"error": error}, status=status, headers=headers)
        return web.json_response({"id": created or activity_id})

    def _append(
        self,
        method: Method,
        request: web.Request,
        conversation_id: str,
        activity_id: str,
        body: dict[str, Any],
        status: int,
        created: str,
    ) -> None:
        self.calls.append(
            ConnectorCall(
                method=method,
                conversation_id=conversation_id,
                activity_id=activity_id,
                body=body,
                status=status,
                at=time.monotonic(),
                created_id=created,
                authorization=request.headers.get("Authorization", ""),
            )
        )
        self._changed.set()

    async def _create(self, request: web.Request) -> web.Response:
        return await self._record("create_conversation", request, "", "")

    async def _send(self, request: web.Request) -> web.Response:
        return await self._record("send", request, request.match_info["cid"], "")

    async def _reply(self, request: web.Request) -> web.Response:
        return await self._record("reply", request, request.match_info["cid"], request.match_info["aid"])

    async def _update(self, request: web.Request) -> web.Response:
        return await self._record("update", request, request.match_info["cid"], request.match_info["aid"])

    def _account(self, user_id: str, upn: str, email: str) -> dict[str, Any]:
        """A TeamsChannelAccount as the roster APIs answer it."""
        name = upn.split("@")[0].title()
        return {
            "id": user_id,
            "name": name,
            "aadObjectId": f"aad-{user_id}",
            "givenName": name,
            "surname": "",
            "email": email,
            "userPrincipalName": upn,
            "tenantId": TENANT_ID,
            "userRole": "user",
        }

    async def _members(self, request: web.Request) -> web.Response:
        self.lookups.append(request.path)
        people = self.roster.get(request.match_info["cid"].split(";", 1)[0])
        if people is None:
            error = {"code": "ConversationNotFound", "message": "Conversation not found."}
            return web.json_response({"error": error}, status=404)
        return web.json_response([self._account(uid, *names) for uid, names in people.items()])

    async def _member(self, request: web.Request) -> web.Response:
        self.lookups.append(request.path)
        people = self.roster.get(request.match_info["cid"].split(";", 1)[0], {})
        found = people.get(request.match_info["mid"])
        if found is None:
            error = {"code": "MemberNotFoundInConversation", "message": "The member was not found."}
            return web.json_response({"error": error}, status=404)
        return web.json_response(self._account(request.match_info["mid"], *found))

    def ok(self, method: Method | None = None) -> list[ConnectorCall]:
        return [c for c in self.calls if c.status == 200 and (method is None or c.method == method)]

    async def wait_for(self, condition: Callable[[], bool], within: float = 20.0) -> None:
        deadline = time.monotonic() + within
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"condition not met in {within} s; calls: {self.calls}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue

    def message(
        self,
        text: str,
        *,
        activity_id: str = "question-1",
        conversation_id: str = "19:channel-1@thread.tacv2;messageid=question-1",
        conversation_type: str = "channel",
        mention: bool = True,
        value: dict[str, Any] | None = None,
        user_id: str = USER_ID,
    ) -> dict[str, Any]:
        """An incoming message as Teams posts it: the mention in the text and as an entity."""
        entities = []
        if mention:
            text = f"<at>Confer</at> {text}"
            entities.append(
                {"type": "mention", "text": "<at>Confer</at>", "mentioned": {"id": BOT_ID, "name": "Confer"}}
            )
        activity: dict[str, Any] = {
            "type": "message",
            "id": activity_id,
            "timestamp": "2026-11-23T08:00:00.000Z",
            "serviceUrl": self.url,
            "channelId": "msteams",
            "from": {"id": user_id, "name": "Ada", "aadObjectId": "00000000-0000-0000-0000-000000000001"},
            "conversation": {
                "id": conversation_id,
                "conversationType": conversation_type,
                "tenantId": TENANT_ID,
                "isGroup": conversation_type != "personal",
            },
            "recipient": {"id": BOT_ID, "name": "Confer"},
            "text": text,
            "textFormat": "plain",
            "entities": entities,
            "channelData": {"tenant": {"id": TENANT_ID}},
        }
        if value is not None:
            activity["value"] = value
        return activity
