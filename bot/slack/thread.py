"""Slack's side of one question's thread: the chat core's ``ChatThread`` over the Web API gateway.

The status is a threaded message edited with ``chat.update`` within the workspace's budget (about 50
edits a minute); on 429 the budget pauses and the core's status writer sends the latest state after
``Retry-After``. The answer is Block Kit, posted again as plain text if Slack rejects its blocks.
Its first block carries an id of its own, so that when the connection breaks after the post was
sent, the thread is read (``conversations.replies``; for a direct message answered in the
conversation itself, its history from the status message on: ``conversations.history``) and the
answer posted again only if it is not there.
"""

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from bot.chat.progress import StatusState
from bot.chat.ratelimit import Budget, RetryLaterError
from bot.chat.render import AnswerFooter
from bot.slack.blocks import answer_message, status_text
from bot.slack.gateway import RateLimitedError, SlackCallError, SlackGateway
from graph import Answer
from retrieval.collections import CollectionsConfig

logger = logging.getLogger(__name__)

_BLOCK_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long", "msg_too_long"})
ANSWER_BLOCK = "answer:{id}"  # the block id of an answer's first block: finds a post whose answer was lost
LOOK_PAGE = 200  # messages per page of conversations.replies or .history when looking for a lost post
LOOK_PAGES = 5


async def post_message(
    gateway: SlackGateway, channel: str, thread_ts: str | None, text: str, **extra: Any
) -> dict[str, Any]:
    """``chat.postMessage`` with link unfurling off, in ``thread_ts`` when given."""
    params: dict[str, Any] = {"channel": channel, "text": text, "unfurl_links": False, "unfurl_media": False}
    if thread_ts:
        params["thread_ts"] = thread_ts
    return await gateway.call("chat.postMessage", **params, **extra)


async def find_post(
    gateway: SlackGateway, channel: str, thread_ts: str, *, block_id: str, oldest: str
) -> str | None:
    """The ts of the message in thread ``thread_ts``, from ``oldest`` on, that has a block
    ``block_id``; without a thread (a direct message answered at the top of the conversation) the
    conversation's own messages are read instead. ``None`` when there is none. Raises
    ``SlackCallError`` when the messages cannot be read."""
    cursor = ""
    method = "conversations.replies" if thread_ts else "conversations.history"
    for _ in range(LOOK_PAGES):
        params: dict[str, Any] = {"channel": channel, "limit": LOOK_PAGE}
        if thread_ts:
            params["ts"] = thread_ts
        if oldest:
            params["oldest"] = oldest
        if cursor:
            params["cursor"] = cursor
        response = await gateway.call(method, inclusive=True, **params)
        for message in response.get("messages") or []:
            blocks = message.get("blocks") if isinstance(message, dict) else None
            if any(isinstance(b, dict) and b.get("block_id") == block_id for b in blocks or []):
                return str(message.get("ts", ""))
        cursor = str((response.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return None
    return None


@dataclass
class SlackThread:
    gateway: SlackGateway
    config: CollectionsConfig
    team: str
    channel: str
    thread_ts: str
    status_ts: str | None = None
    answer_ts: str | None = None
    _answer_buttons: bool = True  # whether Slack took the answer's native feedback buttons

    async def post_status(self, state: StatusState) -> None:
        response = await post_message(
            self.gateway, self.channel, self.thread_ts, status_text(state, self.config)
        )
        self.status_ts = str(response.get("ts", ""))

    async def edit_status(self, state: StatusState) -> None:
        await self.within_budget(
            self.gateway.update_budget,
            "chat.update",
            channel=self.channel,
            ts=self.status_ts,
            text=status_text(state, self.config),
        )

    async def within_budget(self, budget: Budget, method: str, **params: Any) -> None:
        """One progress call within the workspace's ``budget``; a 429 pauses the budget and is handed
        to the status writer (``RetryLaterError``), which sends whatever is latest once
        ``Retry-After`` has passed."""
        await budget.acquire(self.team)
        try:
            await self.gateway.call(method, retry_rate_limited=False, **params)
        except RateLimitedError as limited:
            await budget.pause(self.team, limited.retry_after)
            raise RetryLaterError(method=method, retry_after=limited.retry_after) from None

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        """Post with Block Kit; if Slack rejects the blocks, post them again without the native
        feedback buttons (a workspace or client that refuses ``context_actions``), then the same
        answer as plain text."""
        blocks, text = answer_message(answer, self.config, footer)
        ident = footer.question_id if footer is not None and footer.question_id else uuid.uuid4().hex[:16]
        marker = ANSWER_BLOCK.format(id=ident)
        if blocks:
            blocks = [{**blocks[0], "block_id": marker}, *blocks[1:]]
        attempts = [blocks]
        plain = [b for b in blocks if b["type"] != "context_actions"]
        if len(plain) < len(blocks):
            attempts.append(plain)
        for attempt in attempts:
            try:
                response = await self._post_once(text, attempt, marker)
            except SlackCallError as error:
                if error.error not in _BLOCK_ERRORS:
                    raise
                logger.warning("answer blocks rejected", extra={"error": error.error, "blocks": len(attempt)})
                continue
            self.answer_ts, self._answer_buttons = str(response.get("ts", "")), attempt is blocks
            return
        await post_message(self.gateway, self.channel, self.thread_ts, text)
        self.answer_ts = None  # plain text: nothing to add buttons to

    def look_from(self) -> str:
        """The oldest message a post of this question can be (its status, else the thread)."""
        return self.status_ts or self.thread_ts

    async def _post_once(self, text: str, blocks: list[dict[str, Any]], marker: str) -> dict[str, Any]:
        """Post ``blocks``; when the connection broke after sending (Slack may have applied it),
        look for ``marker`` in the thread and send it again only when it is not there. A thread
        that cannot be read leaves the error as it was: never a blind second post."""
        try:
            return await post_message(self.gateway, self.channel, self.thread_ts, text, blocks=blocks)
        except SlackCallError as error:
            if not error.uncertain:
                raise
            try:
                found = await find_post(
                    self.gateway, self.channel, self.thread_ts, block_id=marker, oldest=self.look_from()
                )
            except SlackCallError:
                raise error from None
        if found is not None:
            logger.info("the answer's post was lost on the way back; it is in the thread")
            return {"ts": found}
        logger.info("the answer's post was lost before Slack applied it; posting it again")
        return await post_message(self.gateway, self.channel, self.thread_ts, text, blocks=blocks)

    async def edit_answer(self, answer: Answer, footer: AnswerFooter) -> None:
        """The posted answer again with ``footer`` (its suggested follow-ups came later), in the
        form Slack took it (without the native feedback buttons if it refused them)."""
        if not self.answer_ts:
            raise SlackCallError(method="chat.update", error="no answer message")
        blocks, text = answer_message(answer, self.config, footer)
        if not self._answer_buttons:
            blocks = [b for b in blocks if b["type"] != "context_actions"]
        budget = self.gateway.update_budget
        await budget.acquire(self.team)
        await self.gateway.call(
            "chat.update", channel=self.channel, ts=self.answer_ts, text=text, blocks=blocks
        )

    async def say(self, text: str) -> None:
        try:
            await post_message(self.gateway, self.channel, self.thread_ts, text)
        except SlackCallError:
            logger.warning("could not post to slack")
