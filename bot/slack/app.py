"""The Bolt app: mentions, ``/ask``, feedback buttons and suggested follow-ups; each question
answered in its thread."""

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from bot import messages
from bot.chat.access import PlaceDeniedError
from bot.chat.audience import Asker, People
from bot.chat.feedback import REASONS, VOTES, Place, Reason, Vote
from bot.chat.intake import Delivery, Intake, Message, Opener, Taken
from bot.chat.progress import StatusState
from bot.chat.render import AnswerFooter
from bot.chat.service import ResearchService
from bot.chat.turns import TurnGate
from bot.metrics import ConferMetrics
from bot.settings import SettingsError
from bot.slack.acks import AckFirstApp, AckWindow
from bot.slack.blocks import (
    AGAIN_ACTION,
    COMMENT_BLOCK,
    FEEDBACK_ACTION,
    FEEDBACK_FORM,
    LEGACY_FEEDBACK_ACTIONS,
    REASON_BLOCK,
    TRACE_ACTION,
    answer_message,
    feedback_form,
    trace_message,
)
from bot.slack.followups import SlackHistory, parse_message, thread_key
from bot.slack.gateway import (
    CONNECTION_LOST,
    TIMED_OUT,
    ResponseUrlError,
    SlackCallError,
    SlackGateway,
    respond,
)
from bot.slack.mrkdwn import neutralize
from bot.slack.payloads import (
    BlockAction,
    Mention,
    PayloadError,
    SlashCommand,
    is_user_id,
    parse_block_action,
    parse_command,
    parse_feedback_form,
    parse_mention,
    plain_text,
    strip_bot_mention,
)
from bot.slack.people import SlackDirectory
from bot.slack.stream import EditOnlyWorkspaces, ProgressMode, StreamedSlackThread
from bot.slack.thread import SlackThread, post_message
from graph import Answer, CollectionAccessError, Question

logger = logging.getLogger(__name__)

COMMAND = "/ask"
MENTION = "app_mention"
MESSAGE = "message"
LISTENERS_PER_TURN = 16


@dataclass
class SlackResponder:
    """Opens the threads questions are answered in, and tells people privately."""

    service: ResearchService
    gateway: SlackGateway
    status_interval: float = 1.0
    progress: ProgressMode = "stream"
    stream_interval: float = 0.25  # streamed plans: at most about 4 appends a second per message
    workspaces: EditOnlyWorkspaces = field(default_factory=EditOnlyWorkspaces)
    people: People = field(default_factory=People)  # who asks and who is in a channel, kept a while

    def asker(self, user: str, channel: str) -> Asker | None:
        """Who asked in ``channel``: the answer is for them alone in a direct message, else for
        everyone in the channel (``bot.chat.audience``)."""
        if not is_user_id(user):
            return None
        return Asker(
            user=user,
            place=channel,
            private=channel.startswith("D"),
            people=self.people,
            directory=SlackDirectory(self.gateway),
        )

    async def post(self, channel: str, thread_ts: str | None, text: str, **extra: Any) -> dict[str, Any]:
        return await post_message(self.gateway, channel, thread_ts, text, **extra)

    async def ephemeral(
        self,
        channel: str,
        user: str,
        text: str,
        thread_ts: str | None = None,
        *,
        blocks: list[dict[str, Any]] | None = None,
    ) -> bool:
        params: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            params["thread_ts"] = thread_ts
        if blocks:
            params["blocks"] = blocks
        try:
            await self.gateway.call("chat.postEphemeral", **params)
        except SlackCallError:
            logger.warning("could not send an ephemeral message")
            return False
        return True

    async def delivery(
        self,
        *,
        team: str,
        channel: str,
        thread_ts: str,
        user: str = "",
        on_undelivered: Callable[[], Awaitable[None]] | None = None,
    ) -> Delivery:
        """The thread ``thread_ts``: streamed to ``user`` (a loading state at once, then one reply
        with a live plan and the answer) unless progress is ``edit`` or the workspace refused
        streams. ``on_undelivered`` tells the asker another way when nothing reached the thread."""
        config = self.service.config
        thread: SlackThread
        interval = self.status_interval
        if self.progress == "stream":
            streamed = StreamedSlackThread(
                gateway=self.gateway,
                config=config,
                team=team,
                channel=channel,
                thread_ts=thread_ts,
                user=user if is_user_id(user) else "",
                metrics=self.gateway.metrics,
                workspaces=self.workspaces,
            )
            if streamed.can_stream:
                await streamed.set_loading()
                interval = min(interval, self.stream_interval)
            thread = streamed
        else:
            thread = SlackThread(
                gateway=self.gateway, config=config, team=team, channel=channel, thread_ts=thread_ts
            )

        async def privately(text: str) -> None:
            await self.ephemeral(channel, user, text, thread_ts or None)

        return Delivery(
            thread,
            status_interval=interval,
            key=thread_key(team, channel, thread_ts),
            on_undelivered=on_undelivered,
            privately=privately if is_user_id(user) else None,
        )

    def opener(self, **where: Any) -> Opener:
        """The thread ``where`` names (``delivery``'s arguments), opened when its question starts."""

        @contextlib.asynccontextmanager
        async def open_thread(_question: Question) -> AsyncIterator[Delivery | None]:
            yield await self.delivery(**where)

        return open_thread

    async def tell(
        self, taken: Taken, *, channel: str, user: str, thread_ts: str | None, usage: str = ""
    ) -> None:
        """Tell the asker privately what became of a message that was not queued."""
        text = _reply_text(taken, usage=usage)
        if text:
            await self.ephemeral(channel, user, text, thread_ts or None)


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
        identity = await gateway.call("auth.test", attempts=1)
    except SlackCallError as error:
        if error.error in _REJECTED_TOKEN:
            raise SettingsError([f"SLACK_BOT_TOKEN: Slack rejected it ({error.error})"]) from None
        if error.error in (CONNECTION_LOST, TIMED_OUT):
            url = gateway.client.base_url
            raise SettingsError(
                [f"SLACK_API_URL: could not reach the Slack Web API at {url} ({error.error})"]
            ) from None
        raise SettingsError([f"SLACK_BOT_TOKEN: auth.test failed ({error.error})"]) from None
    gateway.bot_id = str(identity.get("bot_id") or "")  # finds Confer's own messages in a thread
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
        retry_handlers=client.retry_handlers,
    )

    async def authorize() -> AuthorizeResult:
        return identity

    return {"client": tokenless, "authorize": authorize}


def build_slack_app(
    *,
    signing_secret: str,
    client: AsyncWebClient,
    responder: SlackResponder,
    intake: Intake,
    identity: AuthorizeResult | None = None,
    acks: AckWindow | None = None,
    allowed_bots: frozenset[str] = frozenset(),
    followups: bool = True,
) -> AckFirstApp:
    """``identity`` (from ``authorize_once``) spares every request an ``auth.test``; without it
    Bolt calls ``auth.test`` itself. Events are acked at once; their work waits for the acks
    ``acks`` counts (``bot.slack.acks``). What each event asks goes to the chat core's ``intake``.
    ``followups``: replies in threads Confer answered, and direct messages, are questions
    (CONFER_THREAD_FOLLOWUPS). ``allowed_bots``: the bot and app ids whose mentions are answered
    (CONFER_SLACK_ALLOWED_BOTS); every other bot's mention is ignored, so two bots can never answer
    each other in a loop."""
    authorization = _static_authorization(client, identity) if identity else {"client": client}
    acks = acks or AckWindow()
    app = AckFirstApp(
        acks=acks,
        acked_events=frozenset({MENTION, MESSAGE}),  # the events listened to below
        signing_secret=signing_secret,
        process_before_response=False,
        logger=logging.getLogger("slack_bolt"),
        **authorization,
    )
    gateway = responder.gateway
    # Bolt runs each event's listener after its ack: a burst's listeners start together, so they
    # go on at most LISTENERS_PER_TURN per turn of the event loop (``bot.chat.turns``).
    turns = TurnGate(LISTENERS_PER_TURN)

    async def begin_event() -> None:
        """An event listener's first step: counted until it ends (shutdown waits for it to queue
        its question), then at most LISTENERS_PER_TURN of a burst's listeners go on per turn."""
        current = asyncio.current_task()
        if current is not None:
            acks.track(current)
        await turns.enter()

    @app.event(MENTION)
    async def on_mention(body: dict[str, Any], context: AsyncBoltContext) -> None:
        await begin_event()
        try:
            mention = parse_mention(body)
        except PayloadError:
            logger.warning("ignored a malformed app_mention")
            return
        if _own(mention, context) or (mention.from_bot and not mention.bot_allowed(allowed_bots)):
            logger.debug("ignored a mention sent by a bot", extra={"bot": ",".join(mention.bot_ids)})
            return
        thread = mention.reply_thread
        history = None
        if mention.thread_ts:  # inside a thread: what people wrote before it, unless Confer answered
            history = SlackHistory(
                gateway,
                channel=mention.channel,
                thread_ts=mention.thread_ts,
                before_ts=mention.ts,
                bot_user_id=context.bot_user_id,
            )
        message = Message(
            text=plain_text(strip_bot_mention(mention.text, context.bot_user_id)),
            place=mention.channel,
            surface="mention",
            key=thread_key(mention.team, mention.channel, thread),
            delivery=mention.event_id or None,
            history=history,
            user=mention.user,
            asker=responder.asker(mention.user, mention.channel),
        )
        opener = responder.opener(
            team=mention.team,
            channel=mention.channel,
            thread_ts=thread,
            user=mention.user,
            on_undelivered=lambda: _tell_undelivered(responder, intake.metrics, mention),
        )
        taken = await intake.take(message, opener, neutralize=neutralize)
        await responder.tell(
            taken, channel=mention.channel, user=mention.user, thread_ts=thread, usage=messages.USAGE
        )

    @app.event(MESSAGE)
    async def on_message(body: dict[str, Any], context: AsyncBoltContext) -> None:
        """A reply in a thread Confer answered, or a direct message; everything else is ignored."""
        if intake.conversations is None or not followups:
            return
        await begin_event()
        message = parse_message(body, context.bot_user_id)
        if message is None or message.place is None:
            return
        dm = message.place == "dm"
        thread = message.thread_ts
        taken = await intake.take(
            Message(
                text=plain_text(message.text),
                place=message.channel,
                surface="dm" if dm else "followup",
                key=thread_key(message.team, message.channel, (thread or "dm") if dm else thread),
                delivery=message.event_id or None,
                followup_only=not dm,
                user=message.user,
                history=None
                if dm
                else SlackHistory(
                    gateway, channel=message.channel, thread_ts=thread, bot_user_id=context.bot_user_id
                ),
                asker=responder.asker(message.user, message.channel),
            ),
            responder.opener(
                team=message.team,
                channel=message.channel,
                thread_ts=thread,
                user=message.user,
                on_undelivered=lambda: _tell_privately(
                    responder,
                    intake.metrics,
                    "dm" if dm else "followup",
                    message.channel,
                    message.user,
                    thread,
                ),
            ),
            neutralize=neutralize,
        )
        await responder.tell(taken, channel=message.channel, user=message.user, thread_ts=thread)

    @app.command(COMMAND)
    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            command = parse_command(body)
        except PayloadError:
            await ack(response_type="ephemeral", text=messages.COMMAND_USAGE)
            return
        message = Message(
            text=plain_text(command.text),
            place=command.channel,
            surface="command",
            key=None,  # slash commands cannot run in threads: the answer opens one
            delivery="command:" + command.trigger_id if command.trigger_id else None,
            commands=True,
            user=command.user,
            asker=responder.asker(command.user, command.channel),
        )
        taken = await intake.take(message, _command_opener(responder, intake, command), neutralize=neutralize)
        if taken.outcome in ("queued", "duplicate"):  # a replayed or redelivered request: answered once
            await ack()
            return
        text = _reply_text(taken, usage=messages.COMMAND_USAGE)
        if text:
            await ack(response_type="ephemeral", text=text)
        else:
            await ack()

    @app.action(FEEDBACK_ACTION)
    @app.action(re.compile(rf"^({'|'.join(LEGACY_FEEDBACK_ACTIONS)})$"))
    async def on_feedback(ack: AsyncAck, body: dict[str, Any]) -> None:
        """👍: stored and thanked privately; 👎: stored, then a short form asks why."""
        await ack()
        try:
            click = parse_block_action(body)
        except PayloadError:
            logger.warning("ignored a malformed feedback click")
            return
        parsed = _feedback_vote(click)
        if parsed is None:
            logger.warning("ignored a feedback click with an unknown value")
            return
        vote, question_id = parsed
        voted = await intake.vote(
            question_id, vote, place=Place("slack", click.team, click.channel), voter=click.user
        )
        stored = voted.record
        if vote == "down" and stored is not None and click.trigger_id:
            view = feedback_form(vote_id=stored.id, channel=click.channel, thread_ts=click.thread_ts)
            try:
                await gateway.call("views.open", trigger_id=click.trigger_id, view=view)
                return
            except SlackCallError as error:
                logger.warning("could not open the feedback form", extra={"error": error.error})
        thanks = messages.FEEDBACK_THANKS if stored is not None else messages.FEEDBACK_NOT_KEPT
        if vote == "down" and stored is not None:
            thanks = messages.FEEDBACK_REASON_THANKS
        await responder.ephemeral(click.channel, click.user, thanks, click.thread_ts or None)

    @app.view(FEEDBACK_FORM)
    async def on_feedback_form(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        try:
            form = parse_feedback_form(body, reason_block=REASON_BLOCK, comment_block=COMMENT_BLOCK)
        except PayloadError:
            logger.warning("ignored a malformed feedback form")
            return
        reason: Reason = next((r for r in REASONS if r == form.reason), "other")
        kept = await intake.explain(form.vote_id, reason, form.comment)
        thanks = messages.FEEDBACK_REASON_THANKS if kept else messages.FEEDBACK_NOT_KEPT
        await responder.ephemeral(form.channel, form.user, thanks, form.thread_ts or None)

    @app.action(TRACE_ACTION)
    async def on_trace(ack: AsyncAck, body: dict[str, Any]) -> None:
        """ "How I found this": the answer's trace, shown privately (chat.postEphemeral) to the
        person who asked, with only what this channel may search; anyone else who clicks is told,
        privately, that only the asker can open it."""
        await ack()
        try:
            click = parse_block_action(body)
        except PayloadError:
            logger.warning("ignored a malformed trace click")
            return
        shown = await intake.trace(click.value, place=click.channel, platform="slack", user=click.user)
        if isinstance(shown, str):
            await responder.ephemeral(click.channel, click.user, shown, click.thread_ts or None)
            return
        text, blocks = trace_message(shown)
        await responder.ephemeral(click.channel, click.user, text, click.thread_ts or None, blocks=blocks)

    @app.action(re.compile(rf"^(suggest_\d+|{AGAIN_ACTION})$"))
    async def on_suggestion(ack: AsyncAck, body: dict[str, Any]) -> None:
        """A suggested follow-up: asked in the clicked answer's thread, as if the clicker had
        replied there (the channel's policy, admission and thread memory apply; asked once).
        "Research again" under a cached answer: its question, researched anew there."""
        await ack()
        try:
            click = parse_block_action(body)
        except PayloadError:
            logger.warning("ignored a malformed suggestion click")
            return
        thread = click.thread_ts
        again = click.action_id == AGAIN_ACTION
        dm = click.channel.startswith("D")
        if not thread and not dm:
            logger.warning("ignored a suggestion click outside a thread")
            return
        message = Message(
            text=plain_text(click.value),
            place=click.channel,
            surface="followup" if thread else "dm",
            key=thread_key(click.team, click.channel, thread or "dm"),
            once=None if again else f"suggest:{click.channel}:{thread}:{click.block_id}:{click.action_id}",
            shows_question=True,
            fresh=again,
            user=click.user,  # asked as if the clicker had replied
            asker=responder.asker(click.user, click.channel),
        )
        opener = responder.opener(team=click.team, channel=click.channel, thread_ts=thread, user=click.user)
        taken = await intake.take(message, opener, neutralize=neutralize)
        await responder.tell(taken, channel=click.channel, user=click.user, thread_ts=thread)

    return app


def _own(mention: Mention, context: AsyncBoltContext) -> bool:
    """A mention Confer sent itself (never answered, whatever the allow-list says)."""
    return bool(
        (context.bot_user_id and mention.user == context.bot_user_id)
        or (context.bot_id and context.bot_id in mention.bot_ids)
    )


def _feedback_vote(click: BlockAction) -> tuple[Vote, str] | None:
    """The vote and the question id: ``up:<id>``/``down:<id>`` from feedback_buttons; the
    action id (and no known question) from the plain buttons of answers posted before them."""
    if click.action_id in LEGACY_FEEDBACK_ACTIONS:
        return ("up" if click.action_id == LEGACY_FEEDBACK_ACTIONS[0] else "down"), ""
    word, _, question_id = click.value.partition(":")
    vote = next((v for v in VOTES if v == word), None)
    return (vote, question_id[:40]) if vote is not None else None


def _command_opener(responder: SlackResponder, intake: Intake, command: SlashCommand) -> Opener:
    """Slash commands cannot run in threads: post a root message restating the question, then
    answer under it. Where Confer cannot post (a DM, a channel it has not joined), the answer goes
    to the asker alone through the command's ``response_url``."""

    async def undelivered() -> None:
        await _tell_through_response_url(responder, intake.metrics, command, messages.NOT_POSTED)

    @contextlib.asynccontextmanager
    async def open_thread(question: Question) -> AsyncIterator[Delivery | None]:
        asker = f"<@{command.user}>" if is_user_id(command.user) else "Someone"
        root: dict[str, Any] | None = None
        try:
            root = await responder.post(
                command.channel, None, messages.asked_by(asker, neutralize(question.text))
            )
        except SlackCallError as error:
            logger.warning("could not post the question; answering privately", extra={"error": error.error})
        thread_ts = str(root.get("ts", "")) if root is not None else ""
        if not thread_ts:
            told = await _tell_through_response_url(
                responder, intake.metrics, command, messages.ANSWERING_PRIVATELY
            )
            yield Delivery(PrivateThread(responder, command)) if told else None
            return
        yield await responder.delivery(
            team=command.team,
            channel=command.channel,
            thread_ts=thread_ts,
            user=command.user,
            on_undelivered=undelivered,
        )

    return open_thread


@dataclass
class PrivateThread:
    """``ChatThread`` for a slash command Confer could not answer in the channel: no status, and
    the answer (or what went wrong) to the asker alone through the command's ``response_url``."""

    responder: SlackResponder
    command: SlashCommand
    plain_answer = True  # an ephemeral reply: no feedback buttons, no suggested follow-ups

    async def post_status(self, state: StatusState) -> None:
        """The asker was told the answer comes privately; there is no status to show."""

    async def edit_status(self, state: StatusState) -> None:
        """As ``post_status``."""

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        blocks, text = answer_message(answer, self.responder.service.config)
        payload = {"response_type": "ephemeral", "text": text}
        if not await _respond(self.responder, self.command, {**payload, "blocks": blocks}):
            await _respond(self.responder, self.command, payload)

    async def say(self, text: str) -> None:
        await _respond(self.responder, self.command, {"response_type": "ephemeral", "text": text})


async def _tell_through_response_url(
    responder: SlackResponder, metrics: ConferMetrics, command: SlashCommand, text: str
) -> bool:
    """Tell the asker privately; counted in ``confer_questions_undelivered_total`` either way."""
    told = await _respond(responder, command, {"response_type": "ephemeral", "text": text})
    metrics.questions_undelivered.labels("command", "response_url" if told else "none").inc()
    return told


async def _respond(responder: SlackResponder, command: SlashCommand, payload: dict[str, Any]) -> bool:
    try:
        await respond(responder.gateway.client, command.response_url, **payload)
    except ResponseUrlError as error:
        logger.warning("could not answer through response_url", extra={"error": str(error)})
        return False
    return True


async def _tell_undelivered(responder: SlackResponder, metrics: ConferMetrics, mention: Mention) -> None:
    """A mention whose thread Confer could not post in: the asker hears it privately."""
    await _tell_privately(responder, metrics, "mention", mention.channel, mention.user, mention.reply_thread)


async def _tell_privately(
    responder: SlackResponder, metrics: ConferMetrics, surface: str, channel: str, user: str, thread: str
) -> None:
    """A question whose thread or direct message Confer could not post in (neither its status nor
    its answer): the asker hears it privately, in an ephemeral message."""
    told = await responder.ephemeral(channel, user, messages.NOT_POSTED, thread or None)
    metrics.questions_undelivered.labels(surface, "ephemeral" if told else "none").inc()


def _reply_text(taken: Taken, *, usage: str) -> str:
    """What the asker is told privately about a message the intake did not queue ("" for nothing:
    a redelivery, a reply in a thread that is not Confer's). ``usage``: this surface's help."""
    if taken.refusal is not None:
        return _access_message(taken.refusal)
    return {
        "usage": usage,
        "listing": taken.text,
        "already_asked": messages.SUGGESTION_ALREADY_ASKED,
        "shutting_down": messages.SHUTTING_DOWN,
    }.get(taken.outcome, "")


_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")


def _access_message(error: CollectionAccessError) -> str:
    """Where Confer may not be used, the channels where it may (as Slack channel links, which show
    their names and notify nobody); otherwise which collections this channel may search."""
    if isinstance(error, PlaceDeniedError):
        return messages.place_denied([f"<#{p}>" for p in error.places if _CHANNEL_ID.match(p)])
    return messages.collection_access(error)
