"""Slack payloads parsed into our own models at the edge; nothing past here sees a raw dict."""

import json
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
    from_bot: bool = False  # sent by a bot or an app (``bot_id``, ``bot_profile``, ``bot_message``)
    bot_ids: tuple[str, ...] = ()  # the sender's bot id and app id, for an allow-list

    def bot_allowed(self, allowed: frozenset[str]) -> bool:
        """Whether a bot's mention may be answered: only when ``allowed`` names its bot or app id."""
        return any(ident in allowed for ident in self.bot_ids)

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
    profile = event.get("bot_profile")
    profile = profile if isinstance(profile, dict) else {}
    bot_ids = tuple(
        str(ident) for ident in (event.get("bot_id"), profile.get("id"), profile.get("app_id")) if ident
    )
    try:
        return Mention(
            event_id=body.get("event_id"),
            team=str(body.get("team_id") or event.get("team") or ""),
            channel=event["channel"],
            user=event.get("user", ""),
            text=event.get("text", ""),
            ts=event["ts"],
            thread_ts=event.get("thread_ts") or "",
            from_bot=bool(bot_ids or event.get("bot_profile") or event.get("subtype") == "bot_message"),
            bot_ids=tuple(dict.fromkeys(bot_ids)),
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


class BlockAction(_Frozen):
    """A click on a button of one of Confer's messages."""

    team: str
    channel: str
    user: str
    trigger_id: str = ""  # opens a modal within 3 seconds of the click
    thread_ts: str = ""  # the thread of the clicked message ("" for a message outside threads)
    action_id: str
    block_id: str = ""
    value: str = ""


def parse_block_action(body: Mapping[str, Any]) -> BlockAction:
    """The first action of a ``block_actions`` payload (a feedback_buttons click carries the clicked
    button's value)."""
    try:
        action = (body.get("actions") or [])[0]
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
        return BlockAction(
            team=str((body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id") or ""),
            channel=channel,
            user=(body.get("user") or {})["id"],
            trigger_id=str(body.get("trigger_id") or ""),
            thread_ts=str(container.get("thread_ts") or message.get("thread_ts") or ""),
            action_id=action["action_id"],
            block_id=str(action.get("block_id") or ""),
            value=str(action.get("value") or ""),
        )
    except (IndexError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise PayloadError("block action without channel, user or action") from exc


class FeedbackForm(_Frozen):
    """A submitted 👎 form: the reason, an optional comment, and where to acknowledge it."""

    user: str
    vote_id: str
    channel: str
    thread_ts: str = ""
    reason: str
    comment: str = ""


def parse_feedback_form(body: Mapping[str, Any], *, reason_block: str, comment_block: str) -> FeedbackForm:
    try:
        view = body["view"]
        values = view["state"]["values"]
        metadata = json.loads(view.get("private_metadata") or "{}")
        reason = values[reason_block][reason_block]["selected_option"]["value"]
        comment = (values.get(comment_block) or {}).get(comment_block) or {}
        return FeedbackForm(
            user=body["user"]["id"],
            vote_id=str(metadata.get("vote", "")),
            channel=str(metadata["channel"]),
            thread_ts=str(metadata.get("thread", "")),
            reason=reason,
            comment=str(comment.get("value") or ""),
        )
    except (KeyError, TypeError, AttributeError, ValueError, ValidationError) as exc:
        raise PayloadError("feedback form without reason or metadata") from exc
