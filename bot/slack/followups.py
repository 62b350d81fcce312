"""Slack conversations: which ``message`` events are follow-ups, and reading a thread as context.

Only a person's plain message counts: any subtype (edits, deletions, joins, bot messages, file
shares...), anything with a ``bot_id``, Confer's own posts and messages that mention Confer (the
``app_mention`` event answers those) are ignored, so Confer never answers itself.
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.chat.memory import ThreadKey
from bot.slack.gateway import RateLimitedError, SlackCallError, SlackGateway
from bot.slack.payloads import plain_text
from graph import PriorTurn

logger = logging.getLogger(__name__)

THREAD_MESSAGES = 50  # conversations.replies reads at most this many messages of a thread
RECENT_MESSAGES = 4  # of those before the question, the last few are kept (and the thread's first)
MESSAGE_CHARS = 800  # of each kept message's text
READ_ATTEMPTS = 2  # a thread read is context: one resend on a 5xx or a lost connection, no more
THREAD_SCAN = 200  # the messages looked at for Confer's own when its memory cannot be read

Place = Literal["dm", "thread"]


class ChannelMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str | None
    team: str
    channel: str
    channel_type: str
    user: str
    text: str
    ts: str
    thread_ts: str

    @property
    def place(self) -> Place | None:
        """``dm`` for a direct message, ``thread`` for a reply in a thread, else ``None``."""
        if self.channel_type == "im":
            return "dm"
        if self.thread_ts and self.thread_ts != self.ts:
            return "thread"
        return None


def parse_message(body: Mapping[str, Any], bot_user_id: str | None) -> ChannelMessage | None:
    """A person's message, or ``None`` for everything Confer must not answer."""
    event = body.get("event") or {}
    if event.get("subtype") or event.get("bot_id") or event.get("bot_profile"):
        return None
    user = event.get("user") or ""
    text = event.get("text") or ""
    if not user or (bot_user_id and (user == bot_user_id or f"<@{bot_user_id}" in text)):
        return None
    try:
        return ChannelMessage(
            event_id=body.get("event_id"),
            team=str(body.get("team_id") or event.get("team") or ""),
            channel=event["channel"],
            channel_type=event.get("channel_type") or "",
            user=user,
            text=text,
            ts=event["ts"],
            thread_ts=event.get("thread_ts") or "",
        )
    except (KeyError, TypeError, ValidationError):
        logger.warning("ignored a malformed message event")
        return None


def thread_key(team: str, channel: str, thread_ts: str) -> ThreadKey:
    return ThreadKey("slack", team, channel, thread_ts)


async def read_thread(
    gateway: SlackGateway,
    *,
    channel: str,
    thread_ts: str,
    before_ts: str,
    bot_user_id: str | None,
    max_messages: int = THREAD_MESSAGES,
    recent: int = RECENT_MESSAGES,
) -> list[PriorTurn]:
    """The thread before ``before_ts`` as earlier turns (oldest first, ``origin="thread"``): its
    first message and the last ``recent`` people's messages before the question, text only.

    One ``conversations.replies`` page of at most ``max_messages`` up to the question (a thread of
    thousands of messages costs one call). A person's message is a turn; Confer's own message
    (``bot_user_id``) is the agent's reply to the turn before it (the latest, if it posted
    several); other bots' messages, joins, edits and every other subtype but a reply also sent to
    the channel are left out. A read that fails (an error, a missing scope, a rate limit: never
    waited out) is logged and gives nothing:
    the question is answered as written."""
    try:
        response = await gateway.call(
            "conversations.replies",
            channel=channel,
            ts=thread_ts,
            latest=before_ts,
            limit=max_messages,
            retry_rate_limited=False,
            attempts=READ_ATTEMPTS,
        )
    except SlackCallError as exc:
        logger.warning("could not read the thread; answering as asked", extra={"error": exc.error})
        return []
    except RateLimitedError:
        logger.warning("could not read the thread; answering as asked", extra={"error": "ratelimited"})
        return []
    turns: list[PriorTurn] = []
    for message in (response.get("messages") or [])[:max_messages]:
        if not isinstance(message, dict) or str(message.get("ts", "")) >= before_ts:
            continue
        who = _author(message, bot_user_id)
        text = plain_text(str(message.get("text", "")))[:MESSAGE_CHARS].strip()
        if who == "person" and text:
            turns.append(PriorTurn(question=text, origin="thread"))
        elif who == "agent" and text and turns:  # Confer's reply to the message before it
            turns[-1] = replace(turns[-1], answer=text)
    return turns if len(turns) <= recent + 1 else [turns[0], *turns[-recent:]]


def _author(message: Mapping[str, Any], bot_user_id: str | None) -> Literal["person", "agent"] | None:
    """Who wrote a ``conversations.replies`` message: a person, Confer (the agent), or neither."""
    user = message.get("user")
    if bot_user_id and user == bot_user_id:
        return "agent"
    if message.get("subtype") not in (None, "thread_broadcast") or message.get("bot_id") or not user:
        return None
    return "person"


async def posted_in_thread(
    gateway: SlackGateway, *, channel: str, thread_ts: str, bot_user_id: str | None
) -> bool:
    """Whether Confer (``bot_user_id``) has a message among the thread's first messages: what tells
    that it answered there when its memory cannot be read. One ``conversations.replies`` call, not
    waited out on 429: ``False`` when the thread cannot be read."""
    if not bot_user_id:
        return False
    try:
        response = await gateway.call(
            "conversations.replies",
            channel=channel,
            ts=thread_ts,
            limit=THREAD_SCAN,
            retry_rate_limited=False,
        )
    except SlackCallError as exc:
        logger.warning("could not read the thread", extra={"error": exc.error})
        return False
    except RateLimitedError:
        logger.warning("could not read the thread", extra={"error": "ratelimited"})
        return False
    return any(isinstance(m, dict) and m.get("user") == bot_user_id for m in response.get("messages") or [])


@dataclass
class SlackHistory:
    """What Slack tells of a thread beyond Confer's memory (the chat core's ``ThreadHistory``)."""

    gateway: SlackGateway
    channel: str
    thread_ts: str
    bot_user_id: str | None
    before_ts: str | None = None  # the message asking: what people wrote before it is read

    async def posted(self) -> bool:
        return await posted_in_thread(
            self.gateway, channel=self.channel, thread_ts=self.thread_ts, bot_user_id=self.bot_user_id
        )

    async def earlier(self) -> list[PriorTurn]:
        if self.before_ts is None:
            return []
        return await read_thread(
            self.gateway,
            channel=self.channel,
            thread_ts=self.thread_ts,
            before_ts=self.before_ts,
            bot_user_id=self.bot_user_id,
        )
