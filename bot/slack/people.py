"""Slack's people for ``bot.chat.audience``: who a user is (the email of their profile, which needs
the ``users:read.email`` scope beside ``users:read``) and who is in a channel
(``conversations.members``: ``channels:read``, ``groups:read``, ``mpim:read``).

https://docs.slack.dev/reference/methods/users.info
https://docs.slack.dev/reference/methods/conversations.members
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.chat.audience import MAX_PEOPLE, Person
from bot.slack.gateway import SlackCallError, SlackGateway
from bot.slack.payloads import is_user_id

logger = logging.getLogger(__name__)

SLACKBOT = "USLACKBOT"
MEMBERS_PAGE = 200


@dataclass
class SlackDirectory:
    gateway: SlackGateway

    async def person(self, user: str) -> Person | None:
        """A user by their profile's email; a bot or Slackbot as a bot; ``None`` when Slack does not
        answer (or the token lacks ``users:read``)."""
        if not is_user_id(user):
            return None
        try:
            response = await self.gateway.call("users.info", user=user)
        except SlackCallError as error:
            logger.warning("could not look up a slack user", extra={"error": error.error})
            return None
        info = response.get("user")
        if not isinstance(info, dict):
            return None
        if info.get("is_bot") or info.get("id") == SLACKBOT:
            return Person(bot=True)
        profile = info.get("profile")
        email = profile.get("email") if isinstance(profile, dict) else None
        # No email: a deactivated account, or a token without users:read.email. Not a name sources know.
        if info.get("deleted") or not isinstance(email, str) or not email:
            return Person()
        return Person(names=(email,))

    async def members(self, place: str) -> Sequence[str] | None:
        """The channel's members, page by page (more than ``MAX_PEOPLE`` are not all listed: the
        channel is too large to answer from anything but what everyone may read anyway)."""
        found: list[str] = []
        cursor = ""
        while True:
            try:
                if cursor:
                    response = await self.gateway.call(
                        "conversations.members", channel=place, limit=MEMBERS_PAGE, cursor=cursor
                    )
                else:
                    response = await self.gateway.call(
                        "conversations.members", channel=place, limit=MEMBERS_PAGE
                    )
            except SlackCallError as error:
                logger.warning("could not list a channel's members", extra={"error": error.error})
                return None
            found += [str(m) for m in response.get("members", []) if isinstance(m, str)]
            metadata = response.get("response_metadata")
            cursor = str(metadata.get("next_cursor") or "") if isinstance(metadata, dict) else ""
            if not cursor or len(found) > MAX_PEOPLE:
                return found
