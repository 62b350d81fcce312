"""Incoming Bot Framework activities, parsed at the edge into Confer's own values.

The SDK's ``Activity`` model validates the JSON; past this module nothing reads a raw payload.
"""

import re
from dataclasses import dataclass
from typing import Any, Literal

from microsoft_agents.activity import Activity
from pydantic import ValidationError

from bot.teams.cards import (
    AGAIN_KEY,
    ASK_KEY,
    COMMENT_INPUT,
    FEEDBACK_KEY,
    MAX_COMMENT_CHARS,
    REASON_INPUT,
    TRACE_KEY,
)
from retrieval.errors import ConferError

ConversationType = Literal["personal", "groupChat", "channel"]
Vote = Literal["up", "down"]
_AT_TAG = re.compile(r"<at\b[^>]*>(.*?)</at>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_ENTITIES = {"&nbsp;": " ", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&amp;": "&"}


class ActivityError(ConferError):
    """The request body is not an activity Confer can handle (answered with 400)."""


@dataclass(frozen=True)
class TeamsMessage:
    """A message activity addressed to Confer."""

    activity_id: str
    conversation_id: str  # as received; in a channel it names the reply chain (``;messageid=``)
    conversation_type: ConversationType
    service_url: str
    user_id: str
    bot: dict[str, Any]  # the recipient account, for replies and private chats
    tenant_id: str | None
    text: str  # the bot's mention removed, markup turned into plain text
    mentioned: bool
    vote: Vote | None = None  # a feedback button on an answer card
    answer_id: str = ""
    reason: str = ""  # the 👎 form's reason and comment, when it was sent
    comment: str = ""
    suggested: bool = False  # a suggested follow-up's button: ``text`` is its question
    trace: str = ""  # "How I found this" on an answer card: the answer's question id
    fresh: bool = False  # "Research again" on a cached answer's card: ``text`` is its question

    @property
    def place(self) -> str:
        """The id the collections file's ``channels:`` section uses: a channel, group or personal chat
        id without the ``;messageid=`` of a reply chain."""
        return self.conversation_id.split(";", 1)[0]

    @property
    def addressed(self) -> bool:
        """Personal chats need no mention; channels and group chats do."""
        return self.conversation_type == "personal" or self.mentioned


@dataclass(frozen=True)
class OtherActivity:
    """Anything else (conversation updates, typing, reactions): acknowledged, not answered."""

    activity_id: str
    type: str


def _plain(text: str) -> str:
    text = _TAG.sub(" ", text)
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    return " ".join(text.split())


def _conversation_type(raw: str | None, is_group: bool | None) -> ConversationType:
    if raw in ("personal", "groupChat", "channel"):
        return raw  # type: ignore[return-value]
    return "groupChat" if is_group else "personal"


def _strip_mentions(activity: Any, bot_id: str) -> tuple[str, bool]:
    """Remove every ``<at>`` naming the bot (Teams sends the mention in the text and as an entity)."""
    text = str(activity.text or "")
    mentioned = False
    for entity in activity.get_mentions():
        data = entity.model_dump(by_alias=True) if hasattr(entity, "model_dump") else dict(entity)
        mentioned_id = str((data.get("mentioned") or {}).get("id") or "")
        if mentioned_id and mentioned_id == bot_id:
            mentioned = True
            tagged = str(data.get("text") or "")
            if tagged:
                text = text.replace(tagged, " ")
    return _AT_TAG.sub(lambda m: m.group(1), text), mentioned  # other people's mentions: their names


def parse_activity(body: object) -> TeamsMessage | OtherActivity:
    if not isinstance(body, dict):
        raise ActivityError("not a JSON object")
    try:
        activity = Activity.model_validate(body)
    except ValidationError:
        raise ActivityError("not an activity") from None
    conversation = activity.conversation
    if not activity.type or conversation is None or not conversation.id or not activity.id:
        raise ActivityError("an activity needs type, id and conversation.id")
    if activity.type != "message":
        return OtherActivity(activity_id=str(activity.id), type=str(activity.type))
    sender = activity.from_property
    recipient = activity.recipient
    if not activity.service_url or sender is None or not sender.id or recipient is None or not recipient.id:
        raise ActivityError("a message needs serviceUrl, from.id and recipient.id")
    text, mentioned = _strip_mentions(activity, str(recipient.id))
    from_suggestion = False
    vote: Vote | None = None
    answer = reason = comment = ""
    if isinstance(activity.value, dict) and activity.value.get(FEEDBACK_KEY) in ("up", "down"):
        vote = activity.value[FEEDBACK_KEY]
        answer = str(activity.value.get("answer", ""))[:40]
        reason = str(activity.value.get(REASON_INPUT) or "")[:40]
        comment = str(activity.value.get(COMMENT_INPUT) or "")[:MAX_COMMENT_CHARS]
    traced = activity.value.get(TRACE_KEY) if isinstance(activity.value, dict) else None
    suggested = activity.value.get(ASK_KEY) if isinstance(activity.value, dict) else None
    if isinstance(suggested, str) and suggested.strip():
        # A suggested follow-up's button: its question, asked by the clicker in this reply chain.
        text, mentioned, from_suggestion = suggested[:500], True, True
    again = activity.value.get(AGAIN_KEY) if isinstance(activity.value, dict) else None
    if isinstance(again, str) and again.strip():
        text, mentioned = again[:500], True
    channel_data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    tenant = conversation.tenant_id or (channel_data.get("tenant") or {}).get("id")
    return TeamsMessage(
        activity_id=str(activity.id),
        conversation_id=str(conversation.id),
        conversation_type=_conversation_type(conversation.conversation_type, conversation.is_group),
        service_url=str(activity.service_url),
        user_id=str(sender.id),
        bot={"id": str(recipient.id), "name": str(recipient.name or "")},
        tenant_id=str(tenant) if tenant else None,
        text=_plain(text),
        mentioned=mentioned,
        vote=vote,
        answer_id=answer,
        reason=reason,
        comment=comment,
        suggested=from_suggestion,
        trace=traced[:40] if isinstance(traced, str) else "",
        fresh=isinstance(again, str) and bool(again.strip()),
    )
