"""The Bolt app: mentions, ``/ask``, feedback buttons; each question answered in its thread."""

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from bot import messages
from bot.metrics import ConferMetrics
from bot.render import collection_title
from bot.scheduler import QuestionScheduler, ShuttingDownError
from bot.service import EmptyQuestionError, QuestionTimeoutError, ResearchService, Surface
from bot.settings import SettingsError
from bot.slack.blocks import Row, StatusState, answer_message, summary_line
from bot.slack.dedupe import EventDeduplicator
from bot.slack.gateway import SlackCallError, SlackGateway
from bot.slack.mrkdwn import neutralize
from bot.slack.payloads import (
    PayloadError,
    is_user_id,
    parse_command,
    parse_mention,
    plain_text,
    strip_bot_mention,
)
from bot.slack.status import StatusMessage
from graph.events import BranchFinished, PlanReady, ProgressEvent
from graph.models import Answer, Question
from graph.nodes import DIRECT_KINDS
from graph.planning import CollectionAccessError
from graph.question import classify_question

logger = logging.getLogger(__name__)

COMMAND = "/ask"
_BLOCK_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long", "msg_too_long"})


@dataclass
class SlackResponder:
    """Answers one question in one thread: status message, research, answer, final summary."""

    service: ResearchService
    gateway: SlackGateway
    scheduler: QuestionScheduler
    status_interval: float = 1.0

    async def post(self, channel: str, thread_ts: str | None, text: str, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {
            "channel": channel,
            "text": text,
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread_ts:
            params["thread_ts"] = thread_ts
        return await self.gateway.call("chat.postMessage", **params, **extra)

    async def ephemeral(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
        params: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            params["thread_ts"] = thread_ts
        try:
            await self.gateway.call("chat.postEphemeral", **params)
        except SlackCallError:
            logger.warning("could not send an ephemeral message")

    async def answer(
        self, *, team: str, channel: str, thread_ts: str, question: Question, surface: Surface
    ) -> None:
        config = self.service.config
        if classify_question(question.text) in DIRECT_KINDS:
            answer = await self.service.answer(question, surface=surface)
            blocks, text = answer_message(answer, config)
            await self.post(channel, thread_ts, text, blocks=blocks)
            return
        status = StatusMessage(
            gateway=self.gateway,
            config=config,
            team=team,
            channel=channel,
            thread_ts=thread_ts,
            min_interval=self.status_interval,
        )
        started = time.monotonic()
        answered = False
        try:
            await status.post()

            async def queued(position: int) -> None:
                def change(state: StatusState) -> None:
                    state.phase, state.queue_position = "queued", position

                status.update(change)

            async with self.scheduler.slot(on_queued=queued):
                status.update(lambda s: setattr(s, "phase", "researching"))
                answer = await self.service.answer(
                    question, surface=surface, on_event=_status_updater(status)
                )
            await self.post_answer(channel, thread_ts, answer)
            answered = True
            status.update(lambda s: _finish(s, "done", summary_line(answer, time.monotonic() - started)))
            await status.close()
        except QuestionTimeoutError:
            status.update(lambda s: _finish(s, "failed", "⏱️ Stopped: the question ran out of time."))
            await self._say(channel, thread_ts, messages.TIMED_OUT)
        except asyncio.CancelledError:
            if not answered:  # once the answer is posted, only a late status edit is lost
                status.update(lambda s: _finish(s, "interrupted", "⏹️ Interrupted."))
                await asyncio.shield(self._finish_interrupted(status, channel, thread_ts))
            raise
        except SlackCallError as error:
            logger.warning("could not post to slack", extra={"method": error.method, "error": error.error})
            status.update(lambda s: _finish(s, "failed", "⚠️ Could not post the answer to Slack."))
        except Exception:
            logger.exception("question failed")
            status.update(lambda s: _finish(s, "failed", "⚠️ Something went wrong."))
            await self._say(channel, thread_ts, messages.UNEXPECTED)
        if not answered:
            await status.close()

    async def post_answer(self, channel: str, thread_ts: str, answer: Answer) -> None:
        """Post with Block Kit; if Slack rejects the blocks, post the same answer as plain text."""
        blocks, text = answer_message(answer, self.service.config)
        try:
            await self.post(channel, thread_ts, text, blocks=blocks)
        except SlackCallError as error:
            if error.error not in _BLOCK_ERRORS:
                raise
            logger.warning("answer blocks rejected; posting text", extra={"error": error.error})
            await self.post(channel, thread_ts, text)

    async def _finish_interrupted(self, status: StatusMessage, channel: str, thread_ts: str) -> None:
        await self._say(channel, thread_ts, messages.INTERRUPTED)
        await status.close(wait=10)

    async def _say(self, channel: str, thread_ts: str, text: str) -> None:
        try:
            await self.post(channel, thread_ts, text)
        except SlackCallError:
            logger.warning("could not post to slack")


def _finish(state: StatusState, phase: str, summary: str) -> None:
    state.phase, state.summary = phase, summary


def _status_updater(status: StatusMessage) -> Callable[[ProgressEvent], Awaitable[None]]:
    async def on_event(event: ProgressEvent) -> None:
        if isinstance(event, PlanReady):
            status.update(lambda s: s.rows.update({name: Row() for name in event.collections}))
        elif isinstance(event, BranchFinished):
            row = Row(status=event.status, sources=event.sources, seconds=event.seconds, reason=event.reason)
            status.update(lambda s: s.rows.__setitem__(event.collection, row))

    return on_event


_REJECTED_TOKEN = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
    }
)


async def authorize_once(gateway: SlackGateway) -> AuthorizeResult:
    """The bot's identity from one ``auth.test`` at start-up, so that no request waits on it (Bolt
    would otherwise call it for every request until its first call returns: a herd on a cold start).
    A token Slack rejects, or a Slack that cannot be reached, stops the start with one clear line."""
    try:
        identity = await gateway.call("auth.test")
    except SlackCallError as error:
        if error.error in _REJECTED_TOKEN:
            raise SettingsError([f"SLACK_BOT_TOKEN: Slack rejected it ({error.error})"]) from None
        raise SettingsError([f"SLACK_BOT_TOKEN: auth.test failed ({error.error})"]) from None
    except (aiohttp.ClientError, TimeoutError) as error:
        url = gateway.client.base_url
        raise SettingsError(
            [f"SLACK_API_URL: could not reach the Slack Web API at {url} ({type(error).__name__})"]
        ) from None
    return AuthorizeResult(
        enterprise_id=identity.get("enterprise_id"),
        team_id=identity.get("team_id"),
        team=identity.get("team"),
        url=identity.get("url"),
        bot_id=identity.get("bot_id"),
        bot_user_id=identity.get("user_id"),
        bot_token=gateway.client.token,
    )


def _static_authorization(client: AsyncWebClient, identity: AuthorizeResult) -> dict[str, Any]:
    """AsyncApp arguments that authorize every request with ``identity`` (no ``auth.test``): Bolt
    takes ``authorize`` only from a client without a token; the session is the same."""
    tokenless = AsyncWebClient(
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        session=client.session,
        headers=client.headers,
        logger=client.logger,
    )

    async def authorize() -> AuthorizeResult:
        return identity

    return {"client": tokenless, "authorize": authorize}


def build_slack_app(
    *,
    signing_secret: str,
    client: AsyncWebClient,
    responder: SlackResponder,
    dedupe: EventDeduplicator,
    metrics: ConferMetrics,
    identity: AuthorizeResult | None = None,
) -> AsyncApp:
    """``identity`` (from ``authorize_once``) spares every request an ``auth.test``; without it
    Bolt calls ``auth.test`` itself."""
    authorization = _static_authorization(client, identity) if identity else {"client": client}
    app = AsyncApp(
        signing_secret=signing_secret,
        process_before_response=False,
        logger=logging.getLogger("slack_bolt"),
        **authorization,
    )
    service = responder.service
    scheduler = responder.scheduler

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], context: AsyncBoltContext) -> None:
        try:
            mention = parse_mention(body)
        except PayloadError:
            logger.warning("ignored a malformed app_mention")
            return
        if mention.event_id and not await dedupe.first_delivery(mention.event_id):
            metrics.events_deduplicated.inc()
            return
        text = plain_text(strip_bot_mention(mention.text, context.bot_user_id))
        thread = mention.reply_thread
        try:
            question = service.make_question(text, channel=mention.channel)
        except EmptyQuestionError:
            await responder.ephemeral(mention.channel, mention.user, messages.USAGE, thread)
            service.record_rejected("mention")
            return
        except CollectionAccessError as error:
            await responder.ephemeral(
                mention.channel, mention.user, messages.collection_access(error), thread
            )
            service.record_rejected("mention")
            return
        try:
            scheduler.submit(
                responder.answer(
                    team=mention.team,
                    channel=mention.channel,
                    thread_ts=thread,
                    question=question,
                    surface="mention",
                )
            )
        except ShuttingDownError:
            await responder.ephemeral(mention.channel, mention.user, messages.SHUTTING_DOWN, thread)

    @app.command(COMMAND)
    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            command = parse_command(body)
        except PayloadError:
            await ack(response_type="ephemeral", text=messages.COMMAND_USAGE)
            return
        word = command.text.strip().lower()
        if word in ("", "help"):
            await ack(response_type="ephemeral", text=messages.COMMAND_USAGE)
            return
        if word == "list":
            await ack(response_type="ephemeral", text=_collections_list(service, command.channel))
            return
        try:
            question = service.make_question(plain_text(command.text), channel=command.channel)
        except EmptyQuestionError:
            await ack(response_type="ephemeral", text=messages.COMMAND_USAGE)
            return
        except CollectionAccessError as error:
            service.record_rejected("command")
            await ack(response_type="ephemeral", text=messages.collection_access(error))
            return
        if not scheduler.accepting:
            await ack(response_type="ephemeral", text=messages.SHUTTING_DOWN)
            return
        await ack()
        scheduler.submit(_answer_command(responder, command.team, command.channel, command.user, question))

    @app.action(re.compile(r"^feedback_(up|down)$"))
    async def on_feedback(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        actions = body.get("actions") or [{}]
        vote = "up" if actions[0].get("action_id") == "feedback_up" else "down"
        metrics.feedback.labels(vote).inc()
        logger.info(
            "answer feedback", extra={"vote": vote, "answer": str(actions[0].get("block_id", ""))[:40]}
        )

    return app


async def _answer_command(
    responder: SlackResponder, team: str, channel: str, user: str, question: Question
) -> None:
    """Slash commands cannot run in threads: post a root message restating the question, then
    answer under it."""
    asker = f"<@{user}>" if is_user_id(user) else "Someone"
    try:
        root = await responder.post(channel, None, messages.asked_by(asker, neutralize(question.text)))
    except SlackCallError as error:
        logger.warning("could not post the question", extra={"error": error.error})
        return
    await responder.answer(
        team=team, channel=channel, thread_ts=str(root.get("ts", "")), question=question, surface="command"
    )


def _collections_list(service: ResearchService, channel: str) -> str:
    config = service.config
    allowed = config.policy_for(channel).allow
    entries = []
    for name in allowed:
        collection = config.get(name)
        if collection is not None:
            entries.append(
                (name, neutralize(collection_title(config, name)), neutralize(collection.description))
            )
    return messages.collections_list(entries)
