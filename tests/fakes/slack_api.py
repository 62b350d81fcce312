"""A fake Slack Web API on 127.0.0.1: records every call, answers like Slack, and can be told to
answer 429 (with Retry-After), 5xx or ``ok: false`` for a method, to answer late, or to drop the
connection before or after applying a call: once, for a number of calls, or throughout; for every
call of the method or only those to one channel (or matching a predicate), after letting the first
ones through. Confer's posts in a thread (messages and streams) show in ``conversations.replies``,
and its top-level posts in ``conversations.history``, as they would in Slack. People (``person``)
are answered by ``users.info`` and channels' members (``join``) by ``conversations.members``; an
unknown user or channel is ``user_not_found`` / ``channel_not_found``, as Slack answers."""

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl

from aiohttp import web

from tests.fakes.server import serve_locally

BOT_USER_ID = "UCONFER"
TEAM_ID = "T0001"


STREAM_METHODS = frozenset({"chat.startStream", "chat.appendStream", "chat.stopStream"})


@dataclass(frozen=True)
class Call:
    method: str
    params: dict[str, Any]
    status: int
    at: float
    response: dict[str, Any] = field(default_factory=dict)


TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
CHUNK_TYPES = frozenset({"markdown_text", "task_update", "plan_update", "blocks"})
MAX_MARKDOWN = 12_000


@dataclass
class Stream:
    """One streamed message: every chunk it received, in order, and how it ended."""

    channel: str
    thread_ts: str
    ts: str
    recipient_user_id: str
    task_display_mode: str
    chunks: list[dict[str, Any]] = field(default_factory=list)
    chunk_at: list[float] = field(default_factory=list)  # when each chunk arrived
    blocks: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    started_at: float = 0.0
    stopped_at: float = 0.0
    calls: int = 0

    @property
    def text(self) -> str:
        return "".join(c["text"] for c in self.chunks if c["type"] == "markdown_text")

    def tasks(self) -> dict[str, dict[str, Any]]:
        """Each task's latest state (a task_update replaces the fields it carries)."""
        tasks: dict[str, dict[str, Any]] = {}
        for chunk in self.chunks:
            if chunk["type"] == "task_update":
                tasks.setdefault(chunk["id"], {}).update(chunk)
        return tasks

    def statuses(self, task_id: str) -> list[str]:
        """The states a task went through, repeats dropped."""
        seen: list[str] = []
        for chunk in self.chunks:
            if (
                chunk["type"] == "task_update"
                and chunk["id"] == task_id
                and (not seen or seen[-1] != chunk["status"])
            ):
                seen.append(chunk["status"])
        return seen

    def final_at(self, task_id: str) -> float | None:
        """When the task first showed complete or error."""
        for chunk, at in zip(self.chunks, self.chunk_at, strict=True):
            if (
                chunk["type"] == "task_update"
                and chunk["id"] == task_id
                and chunk["status"] in ("complete", "error")
            ):
                return at
        return None

    def finished_order(self) -> list[str]:
        """Task ids in the order they first reached complete or error."""
        order: list[str] = []
        for chunk in self.chunks:
            if (
                chunk["type"] == "task_update"
                and chunk["status"] in ("complete", "error")
                and chunk["id"] not in order
            ):
                order.append(chunk["id"])
        return order

    def strings(self) -> list[str]:
        """Every string in every chunk and closing block: what a person could read."""
        found: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(self.chunks)
        walk(self.blocks)
        return found


def _chunk_error(params: dict[str, Any]) -> str | None:
    chunks = params.get("chunks") or []
    markdown = len(params.get("markdown_text") or "") + sum(
        len(c.get("text", "")) for c in chunks if isinstance(c, dict) and c.get("type") == "markdown_text"
    )
    if markdown > MAX_MARKDOWN:
        return "msg_too_long"
    for chunk in chunks:
        if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
            return "invalid_chunks"
        if chunk["type"] == "task_update" and (
            chunk.get("status") not in TASK_STATUSES or not chunk.get("id") or not chunk.get("title")
        ):
            return "invalid_chunks"
        if chunk["type"] == "task_update":
            for source in chunk.get("sources") or []:
                if source.get("type") != "url" or not str(source.get("url", "")).startswith(
                    ("http://", "https://")
                ):
                    return "invalid_chunks"
    return None


_TS = re.compile(r"\d+\.\d+")  # a message's ts; a thread is named by its first message's


def _from_oldest(messages: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages after ``oldest`` (and at it, with ``inclusive``), as both reads filter them."""
    oldest = str(params.get("oldest") or "")
    if not oldest:
        return messages
    inclusive = params.get("inclusive") in (True, "true", "1", 1)
    return [m for m in messages if str(m.get("ts")) > oldest or (inclusive and str(m.get("ts")) == oldest)]


Drop = Literal["before", "after"]  # the connection breaks before the call is applied, or after


@dataclass
class Scripted:
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    when: Callable[[dict[str, Any]], bool] | None = None  # only calls whose parameters match
    drop: Drop | None = None  # reset the connection instead of answering
    delay: float = 0.0  # seconds before answering (a client's time-out)
    late: float = 0.0  # seconds before answering a call already applied (its reply is slow)
    channel: str | None = None  # only calls to this channel (``channel`` or ``channel_id``)
    always: bool = False  # every matching call from now on, not once
    skip: int = 0  # let this many matching calls through first

    def matches(self, params: dict[str, Any]) -> bool:
        if self.channel is not None and self.channel not in (params.get("channel"), params.get("channel_id")):
            return False
        return self.when is None or self.when(params)


@dataclass
class FakeSlackApi:
    calls: list[Call] = field(default_factory=list)
    _scripts: dict[str, deque[Scripted]] = field(default_factory=lambda: defaultdict(deque))
    _ts: Any = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None
    url: str = ""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    peers: set[object] = field(default_factory=set)  # client connections seen (address, port)
    threads: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # replies
    streams: dict[str, Stream] = field(default_factory=dict)  # by ts
    refuse_streams: str | None = None  # an error every stream method answers (a workspace without them)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # top-level posts, by channel
    users: dict[str, dict[str, Any]] = field(default_factory=dict)  # users.info's ``user``, by id
    members: dict[str, list[str]] = field(default_factory=dict)  # conversations.members, by channel

    def person(self, user: str, email: str | None, *, bot: bool = False) -> None:
        """A user as https://docs.slack.dev/reference/methods/users.info answers it: ``profile.email``
        only with the ``users:read.email`` scope (``None``: the token lacks it)."""
        profile: dict[str, Any] = {"real_name": user.title(), "display_name": user.lower()}
        if email is not None:
            profile["email"] = email
        self.users[user] = {
            "id": user,
            "team_id": TEAM_ID,
            "name": user.lower(),
            "deleted": False,
            "is_bot": bot,
            "is_app_user": False,
            "profile": profile,
        }

    def join(self, channel: str, *users: str) -> None:
        """Put people in a channel (Confer itself is a member of any channel it answers in: a bot,
        as users.info says)."""
        if BOT_USER_ID not in self.users:
            self.person(BOT_USER_ID, None, bot=True)
        self.members.setdefault(channel, [BOT_USER_ID])
        self.members[channel] += [u for u in users if u not in self.members[channel]]

    def script(
        self,
        method: str,
        *,
        status: int = 200,
        error: str | None = None,
        retry_after: float | None = None,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] | None = None,
        drop: Drop | None = None,
        delay: float = 0.0,
        late: float = 0.0,
        channel: str | None = None,
        always: bool = False,
        skip: int = 0,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (every one with ``always``) that go to
        ``channel`` and match ``when``, after ``skip`` of them went through, as told."""
        for _ in range(1 if always else times):
            self._scripts[method].append(
                Scripted(
                    status=status,
                    error=error,
                    retry_after=retry_after,
                    when=when,
                    drop=drop,
                    delay=delay,
                    late=late,
                    channel=channel,
                    always=always,
                    skip=skip,
                )
            )

    def heal(self) -> None:
        """Slack recovers: every fault still scripted is dropped."""
        self._scripts.clear()

    def _take_script(self, method: str, params: dict[str, Any]) -> Scripted | None:
        for scripted in self._scripts[method]:
            if not scripted.matches(params):
                continue
            if scripted.skip:
                scripted.skip -= 1
                return None
            if not scripted.always:
                self._scripts[method].remove(scripted)
            return scripted
        return None

    async def start(self) -> "FakeSlackApi":
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_post("/commands/{id}", self._response_url)
        app.router.add_get("/socket", self._socket)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}/api"
        return self

    async def stop(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: say hello, then record every acknowledgement the app sends back."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_json({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}})
        self._changed.set()
        async for message in socket:
            if message.type.name == "TEXT":
                self.socket_acks.append(json.loads(message.data))
                self._changed.set()
        return socket

    async def push(self, envelope: dict[str, Any]) -> None:
        """Deliver a Socket Mode envelope to every connected app."""
        for socket in self._sockets:
            await socket.send_json(envelope)

    @property
    def socket_connected(self) -> bool:
        return any(not s.closed for s in self._sockets)

    @property
    def response_url(self) -> str:
        """A slash command's ``response_url`` that lands here (recorded as method ``response_url``)."""
        return self.url.removesuffix("/api") + "/commands/1"

    def responses(self) -> list[dict[str, Any]]:
        """What was sent through ``response_url``, in order."""
        return [c.params for c in self.calls if c.method == "response_url" and c.status == 200]

    async def _response_url(self, request: web.Request) -> web.Response:
        params = await request.json()
        script = self._take_script("response_url", params)
        status = script.status if script else 200
        self.calls.append(Call(method="response_url", params=params, status=status, at=time.monotonic()))
        self._changed.set()
        return web.Response(status=status, text="ok" if status == 200 else "error")

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        self.peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        raw = await request.text()
        if request.content_type == "application/json":
            params: dict[str, Any] = json.loads(raw) if raw else {}
        else:
            params = dict(parse_qsl(raw))
            for key in ("blocks", "attachments", "view"):
                if isinstance(params.get(key), str):
                    params[key] = json.loads(params[key])
        script = self._take_script(method, params)
        if script is not None and script.delay:
            await asyncio.sleep(script.delay)
        if script is not None and script.drop == "before":  # never applied, and no answer
            self.calls.append(Call(method=method, params=params, status=0, at=time.monotonic()))
            self._changed.set()
            return self._drop(request)
        dropped = script is not None and script.drop == "after"
        if dropped:
            script = None  # applied as Slack applies it, then the connection breaks
        if script is None and self.refuse_streams and method in STREAM_METHODS:
            script = Scripted(error=self.refuse_streams)
        if script is None and method in STREAM_METHODS:
            error = self._stream_error(method, params)
            script = Scripted(error=error) if error else None
        if (
            script is None
            and method == "conversations.replies"
            and not _TS.fullmatch(str(params.get("ts") or ""))
        ):
            script = Scripted(error="thread_not_found")
        if script is None and method == "users.info" and str(params.get("user")) not in self.users:
            script = Scripted(error="user_not_found")
        if (
            script is None
            and method == "conversations.members"
            and str(params.get("channel")) not in self.members
        ):
            script = Scripted(error="channel_not_found")
        if script is not None and script.error == "message_not_in_streaming_state":
            # https://docs.slack.dev/reference/methods/chat.appendStream: Slack answers so only for a
            # message that is no longer streaming, so a stream told to answer it has been stopped.
            stream = self.streams.get(str(params.get("ts")))
            if stream is not None and not stream.stopped:
                stream.stopped, stream.stopped_at = True, time.monotonic()
        status = script.status if script else 200
        answer = self._answer(method, params) if status == 200 and not (script and script.error) else {}
        self.calls.append(
            Call(method=method, params=params, status=status, at=time.monotonic(), response=answer)
        )
        self._changed.set()
        if dropped:  # applied, but the answer never reaches the client
            return self._drop(request)
        if script is not None and script.late:  # applied at once, answered after the client gave up
            await asyncio.sleep(script.late)
        if script and script.status == 429:
            # https://docs.slack.dev/apis/web-api/rate-limits: HTTP 429 with Retry-After in seconds
            # (whole seconds in Slack; a test may ask for a fraction to stay fast).
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": f"{script.retry_after or 1:g}"},
            )
        if script and script.status >= 500:
            return web.Response(status=script.status, text="upstream error")
        if script and script.error:
            return web.json_response({"ok": False, "error": script.error})
        return web.json_response(answer)

    @staticmethod
    def _drop(request: web.Request) -> web.Response:
        """Reset the client's connection (a proxy or a network failure between it and Slack)."""
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=500)  # never written: the connection is gone

    def _show_in_thread(self, channel: str, thread_ts: str, message: dict[str, Any]) -> None:
        """Confer's post, as ``conversations.replies`` shows it (a test may have set the thread)."""
        self.threads.setdefault((channel, thread_ts), []).append(
            {"type": "message", "user": BOT_USER_ID, "bot_id": "BCONFER", "thread_ts": thread_ts, **message}
        )

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://confer.example/",
                "team": "Test",
                "user": "confer",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": "BCONFER",
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            shown = {"ts": ts, "text": params.get("text", ""), "blocks": params.get("blocks") or []}
            if params.get("thread_ts"):
                self._show_in_thread(str(params.get("channel")), str(params["thread_ts"]), shown)
            else:  # a top-level post: the channel's history shows it
                self.history.setdefault(str(params.get("channel")), []).append(
                    {"type": "message", "user": BOT_USER_ID, "bot_id": "BCONFER", **shown}
                )
            return {
                "ok": True,
                "channel": params.get("channel"),
                "ts": ts,
                "message": {"text": params.get("text", "")},
            }
        if method == "chat.update":
            return {
                "ok": True,
                "channel": params.get("channel"),
                "ts": params.get("ts"),
                "text": params.get("text"),
            }
        if method == "apps.connections.open":
            return {"ok": True, "url": self.url.replace("http://", "ws://").removesuffix("/api") + "/socket"}
        if method == "conversations.replies":
            # A ``ts`` that names no message is ``thread_not_found`` (answered in ``_handle``).
            return self._replies(params)
        if method == "conversations.history":
            # https://docs.slack.dev/reference/methods/conversations.history: a channel's top-level
            # messages, newest first, from ``oldest`` on (``inclusive``: that one too).
            limit = int(params.get("limit") or 100)
            messages = _from_oldest(self.history.get(str(params.get("channel")), []), params)[::-1]
            return {"ok": True, "messages": messages[:limit], "has_more": len(messages) > limit}
        if method == "chat.startStream":
            ts = f"1700000000.{next(self._ts):06d}"
            stream = Stream(
                channel=str(params["channel"]),
                thread_ts=str(params["thread_ts"]),
                ts=ts,
                recipient_user_id=str(params.get("recipient_user_id", "")),
                task_display_mode=str(params.get("task_display_mode", "timeline")),
                started_at=time.monotonic(),
            )
            self.streams[ts] = stream
            self._record_chunks(stream, params)
            self._show_in_thread(stream.channel, stream.thread_ts, {"ts": ts, "text": ""})
            return {"ok": True, "channel": params.get("channel"), "ts": ts}
        if method in ("chat.appendStream", "chat.stopStream"):
            stream = self.streams[str(params["ts"])]
            self._record_chunks(stream, params)
            if method == "chat.stopStream":
                stream.stopped, stream.stopped_at = True, time.monotonic()
                stream.blocks = list(params.get("blocks") or [])
            return {"ok": True, "channel": stream.channel, "ts": stream.ts}
        if method == "users.info":
            return {"ok": True, "user": self.users[str(params["user"])]}
        if method == "conversations.members":
            # https://docs.slack.dev/reference/methods/conversations.members: cursor-paginated ids
            every = self.members[str(params["channel"])]
            start = int(str(params.get("cursor") or "0").removeprefix("next:") or 0)
            limit = int(params.get("limit") or 100)
            page = every[start : start + limit]
            next_cursor = f"next:{start + limit}" if start + limit < len(every) else ""
            return {"ok": True, "members": page, "response_metadata": {"next_cursor": next_cursor}}
        if method == "views.open":
            return {"ok": True, "view": {**(params.get("view") or {}), "id": f"V{next(self._ts):06d}"}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1700000000.{next(self._ts):06d}"}
        return {"ok": True}

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """``conversations.replies`` as https://docs.slack.dev/reference/methods/conversations.replies
        documents it: the thread oldest first, its parent message first; only messages after
        ``oldest`` and before ``latest`` (their own ts too with ``inclusive``); at most ``limit``
        (default 1000), with ``has_more`` and a ``response_metadata.next_cursor`` when more are in
        the range, which the next page's ``cursor`` continues from."""
        messages = self.threads.get((str(params.get("channel")), str(params.get("ts"))), [])
        inclusive = params.get("inclusive") in (True, "true", "1", 1)
        oldest, latest = str(params.get("oldest") or ""), str(params.get("latest") or "")
        if oldest:
            messages = [
                m for m in messages if str(m.get("ts")) > oldest or (inclusive and str(m.get("ts")) == oldest)
            ]
        if latest:
            messages = [
                m for m in messages if str(m.get("ts")) < latest or (inclusive and str(m.get("ts")) == latest)
            ]
        cursor = str(params.get("cursor") or "")
        if cursor.startswith("next_ts:"):
            messages = [m for m in messages if str(m.get("ts")) >= cursor.removeprefix("next_ts:")]
        limit = int(params.get("limit") or 1000)
        answer: dict[str, Any] = {"ok": True, "messages": messages[:limit], "has_more": len(messages) > limit}
        if len(messages) > limit:
            answer["response_metadata"] = {"next_cursor": f"next_ts:{messages[limit].get('ts')}"}
        return answer

    def _stream_error(self, method: str, params: dict[str, Any]) -> str | None:
        """What Slack would refuse: a stream outside a thread, to nobody in a channel, into a
        message that is not streaming, or with chunks it cannot read."""
        if method == "chat.startStream":
            if not params.get("channel") or not params.get("thread_ts"):
                return "invalid_arguments"
            channel = str(params["channel"])
            if not channel.startswith("D") and not (
                params.get("recipient_user_id") and params.get("recipient_team_id")
            ):
                return "invalid_arguments"
        else:
            stream = self.streams.get(str(params.get("ts")))
            if stream is None or stream.stopped:
                return "message_not_in_streaming_state"
        return _chunk_error(params)

    @staticmethod
    def _record_chunks(stream: Stream, params: dict[str, Any]) -> None:
        stream.calls += 1
        if params.get("markdown_text"):
            stream.chunks.append({"type": "markdown_text", "text": params["markdown_text"]})
        stream.chunks.extend(params.get("chunks") or [])
        stream.chunk_at.extend([time.monotonic()] * (len(stream.chunks) - len(stream.chunk_at)))

    def finished_streams(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.stopped]

    # What tests look at.
    def ok_calls(self, method: str) -> list[Call]:
        """Calls Slack would have answered with ``ok: true``."""
        return [c for c in self.calls if c.method == method and c.status == 200 and c.response.get("ok")]

    def posts(self) -> list[dict[str, Any]]:
        return [c.params for c in self.ok_calls("chat.postMessage")]

    def answers(self) -> list[dict[str, Any]]:
        return [p for p in self.posts() if p.get("blocks")]

    def status_messages(self) -> list[str]:
        """The ts of every status message: threaded posts (or a direct message's top-level posts)
        without blocks that were then edited or could be (the answer carries blocks; root messages
        of /ask have no thread)."""
        return [
            str(c.response["ts"])
            for c in self.ok_calls("chat.postMessage")
            if (c.params.get("thread_ts") or str(c.params.get("channel", "")).startswith("D"))
            and not c.params.get("blocks")
            and c.response.get("ts")
            and str(c.params.get("text", "")).startswith(("🔎", "⏳"))
        ]

    def ephemerals(self) -> list[dict[str, Any]]:
        """What was shown to one person only (``chat.postEphemeral``), in order."""
        return [c.params for c in self.ok_calls("chat.postEphemeral")]

    def updates(self, ts: str) -> list[str]:
        return [c.params["text"] for c in self.ok_calls("chat.update") if c.params.get("ts") == ts]

    async def wait_for(self, predicate: Callable[[], bool], within: float = 15.0) -> None:
        """Wait until ``predicate`` holds, re-checking at each recorded call (no sleeps)."""
        deadline = time.monotonic() + within
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("timed out waiting for the fake Slack API")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.5))
