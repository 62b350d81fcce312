"""Teams' people for ``bot.chat.audience``: a person by the roster of the conversation they wrote in
(their Entra user principal name, and their email), a channel by its members, through the Bot
Framework connector's roster APIs as the Microsoft 365 Agents SDK exposes them.
https://learn.microsoft.com/en-us/microsoftteams/platform/bots/how-to/get-teams-context#fetch-the-roster-or-user-profile
"""

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.chat.audience import Person
from bot.errors import ChatCallError
from bot.teams.connector import TeamsClient

logger = logging.getLogger(__name__)

BOT_ACCOUNT = "28:"  # a bot's account id in Teams begins so (a person's with 29:)


@dataclass
class TeamsDirectory:
    """The people of one conversation, looked up with a client opened for its service address."""

    open: Callable[[], Awaitable[TeamsClient | None]]
    conversation: str  # the conversation a person is looked up in

    async def _with_client(self, call: Callable[[TeamsClient], Awaitable[Any]]) -> Any:
        client = await self.open()
        if client is None:
            return None
        try:
            return await call(client)
        except ChatCallError as error:
            logger.warning(
                "could not read the teams roster", extra={"method": error.method, "error": error.error}
            )
            return None
        finally:
            await client.close()

    async def person(self, user: str) -> Person | None:
        if user.startswith(BOT_ACCOUNT):
            return Person(bot=True)
        account = await self._with_client(lambda client: client.member(self.conversation, user))
        return None if account is None else _person(account)

    async def members(self, place: str) -> Sequence[str] | None:
        accounts = await self._with_client(lambda client: client.members(place))
        if accounts is None:
            return None
        return [str(a["id"]) for a in accounts if a.get("id")]


def _person(account: dict[str, Any]) -> Person:
    """A roster entry: its user principal name and email, the names sources know people by."""
    names = tuple(
        str(account[k])
        for k in ("userPrincipalName", "email")
        if isinstance(account.get(k), str) and account[k]
    )
    return Person(names=tuple(dict.fromkeys(names)))
