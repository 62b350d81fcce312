"""Sends requests to Confer the way Slack does: signed with the signing secret."""

import json
import time
from typing import Any
from urllib.parse import urlencode

from aiohttp import ClientSession
from slack_sdk.signature import SignatureVerifier

from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID

FORM = "application/x-www-form-urlencoded"


class SignedSlack:
    def __init__(
        self,
        *,
        url: str,
        secret: str,
        session: ClientSession,
        response_url: str = "https://hooks.slack.invalid/commands/1",
    ) -> None:
        self.url = url
        self.response_url = response_url
        self.verifier = SignatureVerifier(secret)
        self.session = session
        self._events = 0

    async def send(
        self,
        body: str,
        content_type: str,
        *,
        timestamp: int | None = None,
        signature: str | None = None,
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        signed = signature or self.verifier.generate_signature(timestamp=stamp, body=body) or ""
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signed,
        }
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        async with self.session.post(self.url, data=body.encode(), headers=headers) as response:
            return response.status, await response.text()

    def mention_body(
        self,
        text: str,
        *,
        channel: str = "C0001",
        user: str = "U0USER",
        event_id: str | None = None,
        ts: str | None = None,
        thread_ts: str | None = None,
        **extra: Any,
    ) -> str:
        """An ``app_mention`` event as Slack sends it (``extra``: bot_id, bot_profile, subtype...)."""
        self._events += 1
        event: dict[str, Any] = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{BOT_USER_ID}> {text}",
            "channel": channel,
            "ts": ts or f"1699999999.{self._events:06d}",
            "event_ts": ts or f"1699999999.{self._events:06d}",
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        event.update(extra)
        return json.dumps(
            {
                "token": "legacy",
                "team_id": TEAM_ID,
                "api_app_id": "A0001",
                "type": "event_callback",
                "event_id": event_id or f"Ev{self._events:08d}",
                "event_time": int(time.time()),
                "event": event,
                "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
            }
        )

    def message_body(
        self,
        text: str,
        *,
        channel: str = "C0001",
        channel_type: str = "channel",
        user: str | None = "U0USER",
        ts: str | None = None,
        thread_ts: str | None = None,
        **extra: Any,
    ) -> str:
        """A ``message`` event as Slack sends it (``extra``: subtype, bot_id, edited, ...)."""
        self._events += 1
        event: dict[str, Any] = {
            "type": "message",
            "text": text,
            "channel": channel,
            "channel_type": channel_type,
            "ts": ts or f"1699999999.{self._events:06d}",
            "event_ts": ts or f"1699999999.{self._events:06d}",
            **extra,
        }
        if user:
            event["user"] = user
        if thread_ts:
            event["thread_ts"] = thread_ts
        return json.dumps(
            {
                "token": "legacy",
                "team_id": TEAM_ID,
                "api_app_id": "A0001",
                "type": "event_callback",
                "event_id": f"Ev{self._events:08d}",
                "event_time": int(time.time()),
                "event": event,
                "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
            }
        )

    async def message(self, text: str, **kwargs: Any) -> tuple[int, str]:
        return await self.send(self.message_body(text, **kwargs), "application/json")

    async def mention(self, text: str, **kwargs: Any) -> tuple[int, str]:
        return await self.send(self.mention_body(text, **kwargs), "application/json")

    def command_body(self, text: str, *, channel: str = "C0001", user: str = "U0USER") -> str:
        self._events += 1
        form = {
            "token": "legacy",
            "team_id": TEAM_ID,
            "channel_id": channel,
            "user_id": user,
            "user_name": "someone",
            "command": "/ask",
            "text": text,
            "response_url": self.response_url,
            "trigger_id": f"1.{self._events}.3",
            "api_app_id": "A0001",
        }
        return urlencode(form)

    async def command(self, text: str, *, channel: str = "C0001", user: str = "U0USER") -> tuple[int, str]:
        return await self.send(self.command_body(text, channel=channel, user=user), FORM)

    async def act(
        self,
        action: dict[str, Any],
        *,
        channel: str = "C0001",
        user: str = "U0USER",
        thread_ts: str = "",
        message_ts: str = "1700000000.999999",
        trigger_id: str = "1.2.3",
    ) -> tuple[int, str]:
        """A ``block_actions`` interaction on a message, as Slack sends it (``action``: the clicked
        element's part: ``action_id``, ``block_id``, ``value``, ``type``)."""
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        }
        message: dict[str, Any] = {"type": "message", "ts": message_ts, "user": BOT_USER_ID}
        if thread_ts:
            container["thread_ts"] = thread_ts
            message["thread_ts"] = thread_ts
        payload = {
            "type": "block_actions",
            "team": {"id": TEAM_ID, "domain": "test"},
            "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": "A0001",
            "token": "legacy",
            "trigger_id": trigger_id,
            "channel": {"id": channel, "name": "general"},
            "container": container,
            "message": message,
            "response_url": "https://hooks.slack.invalid/actions/1",
            "actions": [{**action, "action_ts": "1700000000.1"}],
        }
        return await self.send(urlencode({"payload": json.dumps(payload)}), FORM)

    async def submit_view(
        self, view: dict[str, Any], values: dict[str, Any], *, user: str = "U0USER"
    ) -> tuple[int, str]:
        """A ``view_submission`` of a modal Confer opened: ``values`` as Slack puts them in
        ``view.state.values`` (block id → action id → element state)."""
        payload = {
            "type": "view_submission",
            "team": {"id": TEAM_ID, "domain": "test"},
            "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": "A0001",
            "token": "legacy",
            "trigger_id": "4.5.6",
            "view": {**view, "id": "V0001", "team_id": TEAM_ID, "state": {"values": values}},
        }
        return await self.send(urlencode({"payload": json.dumps(payload)}), FORM)

    async def click(self, action_id: str, *, block_id: str = "feedback:abc") -> tuple[int, str]:
        payload = {
            "type": "block_actions",
            "team": {"id": TEAM_ID},
            "user": {"id": "U0USER"},
            "channel": {"id": "C0001"},
            "api_app_id": "A0001",
            "trigger_id": "1.2.3",
            "response_url": "https://hooks.slack.invalid/actions/1",
            "container": {"type": "message"},
            "actions": [
                {
                    "action_id": action_id,
                    "block_id": block_id,
                    "value": "up",
                    "type": "button",
                    "action_ts": "1700000000.1",
                }
            ],
        }
        return await self.send(
            urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
        )
