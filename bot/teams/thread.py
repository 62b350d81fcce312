"""Teams' side of one question's thread: the chat core's ``ChatThread`` over the connector, every
post a reply to the question's activity."""

import logging
from dataclasses import dataclass

from bot.chat.progress import StatusState
from bot.chat.render import AnswerFooter
from bot.errors import ChatCallError
from bot.teams.activities import TeamsMessage
from bot.teams.cards import answer_card, card_activity, status_card, status_lines, text_activity
from bot.teams.connector import TeamsClient
from graph import Answer
from retrieval.collections import CollectionsConfig

logger = logging.getLogger(__name__)


@dataclass
class TeamsThread:
    """``ChatThread`` for one Teams reply chain: every post replies to the question's activity."""

    client: TeamsClient
    message: TeamsMessage
    config: CollectionsConfig
    status_id: str | None = None
    answer_id: str | None = None

    shows_sentences = True  # the status card shows a model-written answer as it is verified

    async def post_status(self, state: StatusState) -> None:
        card = status_card(state, self.config)
        self.status_id = await self.client.reply(
            self.message.conversation_id, self.message.activity_id, card_activity(card)
        )

    async def edit_status(self, state: StatusState) -> None:
        if not self.status_id:
            raise ChatCallError(method="update", error="no status message")
        card = status_card(state, self.config)
        summary = status_lines(state, self.config)[0]
        await self.client.update(
            self.message.conversation_id, self.status_id, card_activity(card, summary=summary)
        )

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        card = answer_card(answer, self.config, footer)
        self.answer_id = await self.client.reply(
            self.message.conversation_id, self.message.activity_id, card_activity(card)
        )

    async def edit_answer(self, answer: Answer, footer: AnswerFooter) -> None:
        """The posted answer's card again with ``footer`` (its suggested follow-ups came later)."""
        if not self.answer_id:
            raise ChatCallError(method="update", error="no answer message")
        card = answer_card(answer, self.config, footer)
        await self.client.update(self.message.conversation_id, self.answer_id, card_activity(card))

    async def say(self, text: str) -> None:
        try:
            await self.client.reply(
                self.message.conversation_id, self.message.activity_id, text_activity(text)
            )
        except ChatCallError as error:
            logger.warning("could not post to teams", extra={"method": error.method, "error": error.error})
