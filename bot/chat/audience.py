"""Who an answer is for, on every platform: the asker, and in a channel everyone in it.

Passages a connector indexed with ``permissions: true`` carry who may read them at their source
(``retrieval.audience``); the research of a question searches only those its audience may read.

- **The asker** is named by the platform (Slack: the email of their profile, ``users.info``;
  Teams: their Entra user principal name and email). Someone the platform cannot name (the lookup
  fails, no email) reads only what everyone may read.
- **A direct message** is answered for the asker alone.
- **A channel** (a group chat too) is answered only from passages every person in it may read at
  the source: the asker and each member (bots left out), looked up through the platform
  (``Directory``): its answer, citations, trace and suggested follow-ups are all made of them, so
  anyone there may see any of it. A channel whose members cannot all be named, or with more than
  ``MAX_PEOPLE`` people, reads only what everyone may read. When passages only some of the people
  there may read would have been among the asker's best matches, the asker alone is told,
  privately, that asking in a direct message searches them too (``restricted_matches``).
- **The terminal** and evaluations are the operator's: every passage.

People and members are kept for ``TTL`` seconds, so a busy channel costs a lookup per person every
few minutes, not per question; a lookup that takes longer than ``LOOKUP_SECONDS`` counts as failed.
Adapters (``bot/slack``, ``bot/teams``) only implement ``Directory``; the rule lives here.
"""

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cachetools import TTLCache

from bot.chat.service import ResearchService
from graph import Question
from retrieval.audience import Audience
from retrieval.collections import Collection
from retrieval.errors import ConferError

logger = logging.getLogger(__name__)

MAX_PEOPLE = 100  # a channel with more: only what everyone may read
TTL = 600.0  # seconds a person's names and a channel's members are kept
LOOKUP_SECONDS = 10.0  # the most naming an audience may take before the question goes on without
LOOKUPS_AT_ONCE = 8  # people looked up together (the platforms rate-limit these calls)
MATCHES_COMPARED = 3  # the asker's best passages per collection checked against the channel's


@dataclass(frozen=True)
class Person:
    """What a platform knows of one account: the names sources know the person by (an email, a user
    principal name; none: not known), and whether it is a bot (not a reader)."""

    names: tuple[str, ...] = ()
    bot: bool = False


class Directory(Protocol):
    """What a platform's adapter tells of its people."""

    async def person(self, user: str) -> Person | None:
        """One account; ``None`` when it cannot be looked up."""
        ...

    async def members(self, place: str) -> Sequence[str] | None:
        """The accounts in a channel or group chat; ``None`` when they cannot be listed."""
        ...


@dataclass
class People:
    """The rule above, with a platform's caches of people and channels (one per platform)."""

    ttl: float = TTL
    max_people: int = MAX_PEOPLE
    lookup_seconds: float = LOOKUP_SECONDS
    clock: Callable[[], float] = time.monotonic
    _people: "TTLCache[str, Person | None]" = field(init=False)
    _members: "TTLCache[str, tuple[str, ...] | None]" = field(init=False)

    def __post_init__(self) -> None:
        self._people = TTLCache(10_000, self.ttl, timer=self.clock)
        self._members = TTLCache(1_000, self.ttl, timer=self.clock)

    async def asker(self, directory: Directory, user: str) -> Audience:
        """The asker alone (a direct message)."""
        try:
            async with asyncio.timeout(self.lookup_seconds):
                person = await self._person(directory, user)
        except TimeoutError:
            person = None
        return _audience(person)

    async def channel(self, directory: Directory, place: str, user: str) -> Audience:
        """The asker and every person in ``place``: what all of them may read."""
        try:
            async with asyncio.timeout(self.lookup_seconds):
                return await self._channel(directory, place, user)
        except TimeoutError:
            logger.warning("the people of a channel took too long to name", extra={"place": place})
            return Audience.anyone()

    async def _channel(self, directory: Directory, place: str, user: str) -> Audience:
        if place not in self._members:
            found = await directory.members(place)
            self._members[place] = None if found is None else tuple(dict.fromkeys(found))
        members = self._members[place]
        if members is None or len(members) > self.max_people:
            return Audience.anyone()
        accounts = list(dict.fromkeys([user, *members]))
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def look_up(account: str) -> Person | None:
            async with gate:
                return await self._person(directory, account)

        people = await asyncio.gather(*(look_up(a) for a in accounts))
        readers = [_audience(p) for p in people if p is None or not p.bot]
        return Audience.together(readers) if readers else Audience.anyone()

    async def _person(self, directory: Directory, user: str) -> Person | None:
        if user not in self._people:
            self._people[user] = await directory.person(user)
        return self._people[user]


def _audience(person: Person | None) -> Audience:
    if person is None or not person.names or person.bot:
        return Audience.anyone()
    return Audience.person(person.names)


@dataclass(frozen=True)
class Asker:
    """Who asked, and where: what a platform hands the chat core with each message."""

    user: str
    place: str
    private: bool  # a direct message: the answer is the asker's alone
    people: People
    directory: Directory

    async def audience(self) -> Audience:
        """Who the answer is for: the asker, or everyone in the channel."""
        if self.private:
            return await self.alone()
        return await self.people.channel(self.directory, self.place, self.user)

    async def alone(self) -> Audience:
        return await self.people.asker(self.directory, self.user)


async def restricted_matches(service: ResearchService, question: Question, asker: Audience) -> bool:
    """Whether, among the asker's best passages for ``question`` in the collections it may search,
    some are ones the question's audience (the channel) may not read. What the channel may read,
    the asker may too, so the channel's best passages hold every one of the asker's it may read:
    any of the asker's missing from them is one only some people there may read."""
    if asker.unrestricted or asker.key == question.audience.key:
        return False
    backend = service.context.backend
    collections = [
        service.context.collections[n] for n in question.allowed if n in service.context.collections
    ]

    async def hidden(collection: Collection) -> bool:
        search = functools.partial(backend.search, collection, question.text, meaning=question.text)
        mine = await search(limit=MATCHES_COMPARED, audience=asker)
        if not mine:
            return False
        # Deeper for the channel: a passage the asker's search ranks among its best is then there
        # whatever the fusion of words and meaning makes of the channel's smaller pool.
        theirs = await search(limit=MATCHES_COMPARED * 4, audience=question.audience)
        return bool({p.id for p in mine} - {p.id for p in theirs})

    try:
        found = await asyncio.gather(*(hidden(c) for c in collections))
    except ConferError:
        return False  # the answer went out; the private note is an extra
    return any(found)
