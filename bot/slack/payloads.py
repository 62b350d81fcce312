"""Slack payloads parsed into our own models at the edge; nothing past here sees a raw dict."""

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from retrieval.errors import ConferError

_ID = r"^[A-Z0-9][A-Z0-9_-]{1,40}$"
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


class PayloadError(ConferError):
    """A Slack payload without the fields Confer needs."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Mention(_Frozen):
    event_id: str | None
    team: str
    channel: str
    user: str
    text: str
    ts: str
    thread_ts: str

    @property
    def reply_thread(self) -> str:
        return self.thread_ts or self.ts


class SlashCommand(_Frozen):
    team: str
    channel: str
    user: str
    text: str
    trigger_id: str = ""  # unique per invocation: a replayed request carries the same one
    response_url: str = ""  # answers the asker even where Confer cannot post


def parse_mention(body: Mapping[str, Any]) -> Mention:
    event = body.get("event") or {}
    try:
        return Mention(
            event_id=body.get("event_id"),
            team=str(body.get("team_id") or event.get("team") or ""),
            channel=event["channel"],
            user=event.get("user", ""),
            text=event.get("text", ""),
            ts=event["ts"],
            thread_ts=event.get("thread_ts") or "",
        )
    except (KeyError, TypeError, ValidationError) as exc:
        raise PayloadError("app_mention without channel or ts") from exc


def parse_command(body: Mapping[str, Any]) -> SlashCommand:
    try:
        return SlashCommand(
            team=str(body.get("team_id", "")),
            channel=body["channel_id"],
            user=body["user_id"],
            text=body.get("text", ""),
            trigger_id=body.get("trigger_id", ""),
            response_url=body.get("response_url", ""),
        )
    except (KeyError, TypeError, ValidationError) as exc:
        raise PayloadError("slash command without channel or user") from exc


_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#[CG][A-Z0-9]+(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(?:here|channel|everyone|subteam\^[A-Z0-9]+)(?:\|[^>]*)?>")


def plain_text(text: str) -> str:
    """Slack's message markup turned back into what the person typed, for searching: links become
    their label (or URL), channels their name, other mentions and broadcasts go, entities decode."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(1)}" if m.group(1) else "", text)
    text = _SPECIAL.sub("", text)
    text = _MENTION.sub("", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def strip_bot_mention(text: str, bot_user_id: str | None) -> str:
    """Remove the bot's own mention (or, if its id is unknown, a leading mention)."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    else:
        text = re.sub(r"^\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>", " ", text)
    return " ".join(text.split())


def is_user_id(value: str) -> bool:
    return bool(re.fullmatch(r"[UW][A-Z0-9]{2,40}", value))
