"""Who may read what: the readers a passage carries from its source, and the audience a search is for.

A passage's ``readers`` are the principals its source lets read it, named as the source names them
(user emails or user principal names, group names), lower-cased; ``EVERYONE`` marks content the
source shows to anyone. A passage with no readers (a file, a source without ``permissions: true``)
is readable by everyone who may search its collection, as before permissions existed.

An ``Audience`` is who will read an answer: the operator (no filter at all), or one or more people,
each named by their principals. A passage is searched for an audience only when it has no readers,
or when every person of the audience may read it (its readers name one of that person's
principals, or ``EVERYONE``). One person is an asker in a direct message; several are the people
of a channel (``bot.chat.audience``). The backends apply it inside the search itself.
"""

import hashlib
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

# Content the source shows to anyone (a Confluence space open to anonymous users, a Drive file
# public on the web): readable by every audience. Not a name any source gives a person or a group.
EVERYONE = "*"
DOMAIN_PREFIX = "domain:"  # everyone with an address at a domain (a Drive file shared with it)


def principal(name: str) -> str:
    """A principal as it is stored and compared: trimmed and case-folded (``Ana@Example.com`` and
    ``ana@example.com`` are one person; Confluence and Entra group names ignore case too)."""
    return name.strip().casefold()


def person_principals(names: Iterable[str]) -> tuple[str, ...]:
    """The principals of one person known by ``names`` (an email, a user principal name): those
    names, the domain of each address (``domain:example.com``), and ``EVERYONE``."""
    found: dict[str, None] = {}
    for name in names:
        value = principal(name)
        if not value or value == EVERYONE:
            continue
        found[value] = None
        if "@" in value:
            found[DOMAIN_PREFIX + value.rsplit("@", 1)[1]] = None
    found[EVERYONE] = None
    return tuple(sorted(found))


def readers_of(names: Iterable[str]) -> tuple[str, ...]:
    """A passage's readers, normalised: each principal once, sorted (``EVERYONE`` alone if there)."""
    found = {principal(n) for n in names if principal(n)}
    return (EVERYONE,) if EVERYONE in found else tuple(sorted(found))


def both_allow(first: Sequence[str] | None, second: Sequence[str] | None) -> tuple[str, ...] | None:
    """Who may read something that both of two rules must allow (a Confluence space's permission and
    its page's restriction): ``None`` is no rule, ``EVERYONE`` allows anyone the other allows."""
    if first is None:
        return None if second is None else readers_of(second)
    if second is None or EVERYONE in second:
        return readers_of(first)
    if EVERYONE in first:
        return readers_of(second)
    return readers_of(set(map(principal, first)) & set(map(principal, second)))


def readers_key(readers: Sequence[str] | None) -> str | None:
    """A short stable name of a readers set (``None`` for none): what the embedded index stores a
    passage's readers under, and what a passage's content digest covers."""
    if readers is None:
        return None
    return "r_" + hashlib.sha256("\x1f".join(readers_of(readers)).encode()).hexdigest()[:20]


class Audience(BaseModel):
    """Who an answer is for. ``people`` is ``None`` for the operator, who may read everything;
    otherwise each person's principals (``person_principals``)."""

    model_config = ConfigDict(frozen=True)

    people: tuple[tuple[str, ...], ...] | None

    @classmethod
    def everything(cls) -> "Audience":
        """The operator (the terminal, an evaluation run): every passage."""
        return cls(people=None)

    @classmethod
    def anyone(cls) -> "Audience":
        """Someone Confer cannot name: only passages readable by everyone."""
        return cls(people=((EVERYONE,),))

    @classmethod
    def person(cls, names: Iterable[str]) -> "Audience":
        """One person known by ``names`` (an email, a user principal name)."""
        return cls(people=(person_principals(names),))

    @classmethod
    def together(cls, audiences: Iterable["Audience"]) -> "Audience":
        """The people of several audiences at once: what every one of them may read."""
        people: list[tuple[str, ...]] = []
        for audience in audiences:
            if audience.people is None:
                continue  # the operator adds no constraint
            people.extend(audience.people)
        return cls(people=tuple(people)) if people else cls.everything()

    @property
    def unrestricted(self) -> bool:
        return self.people is None

    @property
    def constraints(self) -> tuple[tuple[str, ...], ...] | None:
        """The principal sets a passage's readers must each meet (``None``: no filter), fewest
        first: a person whose principals include another's adds nothing, and someone known only as
        anyone leaves only what everyone may read."""
        if self.people is None:
            return None
        sets = {frozenset((*p, EVERYONE)) for p in self.people}
        if not sets or frozenset({EVERYONE}) in sets:
            return ((EVERYONE,),)
        kept = [s for s in sets if not any(other < s for other in sets)]
        return tuple(sorted(tuple(sorted(s)) for s in kept))

    def may_read(self, readers: Sequence[str] | None) -> bool:
        """Whether this audience may read a passage with these readers."""
        constraints = self.constraints
        if constraints is None or readers is None:
            return True
        held = set(map(principal, readers))
        return all(held.intersection(each) for each in constraints)

    @property
    def key(self) -> str:
        """A short name of what this audience may read, for the answer cache's key."""
        constraints = self.constraints
        if constraints is None:
            return "all"
        if constraints == ((EVERYONE,),):
            return "anyone"
        payload = "\x1e".join("\x1f".join(each) for each in constraints)
        return "people:" + hashlib.sha256(payload.encode()).hexdigest()[:24]
