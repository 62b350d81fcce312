"""Who an answer is for (bot/chat/audience.py), the same on every platform: the asker in a direct
message; in a channel, everyone in it, or only what everyone may read when they cannot all be named;
and whether the asker would have found passages the channel may not read."""

import asyncio
from collections.abc import Sequence
from pathlib import Path

from bot.chat.audience import Asker, People, Person, restricted_matches
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph import Question
from graph.context import ResearchLimits
from retrieval.audience import EVERYONE, Audience
from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig
from retrieval.passages import Passage
from tests.fakes.clock import FakeClock

ANA = Audience.person(["ana@example.com"])


class Directory:
    """A platform's people, counting every lookup."""

    def __init__(self, people: dict[str, Person | None], members: dict[str, list[str]] | None = None) -> None:
        self.people, self.channels = people, members or {}
        self.asked: list[str] = []

    async def person(self, user: str) -> Person | None:
        self.asked.append(user)
        return self.people.get(user)

    async def members(self, place: str) -> Sequence[str] | None:
        self.asked.append(place)
        return self.channels.get(place)


PEOPLE: dict[str, Person | None] = {
    "ana": Person(("ana@example.com",)),
    "bo": Person(("bo@example.com",)),
    "cy": Person(("cy@example.com",)),
    "nomail": Person(()),
    "bot": Person(bot=True),
    "gone": None,  # the lookup failed
}


def _asker(directory: Directory, user: str, place: str, *, people: People | None = None) -> Asker:
    return Asker(user, place, place.startswith("D"), people or People(), directory)


ANYONE = Audience.anyone().key  # (audiences compare by what they may read)


async def test_a_direct_message_is_for_the_asker_alone() -> None:
    directory = Directory(PEOPLE)
    assert await _asker(directory, "ana", "Dana").audience() == ANA
    assert (await _asker(directory, "nomail", "Dnomail").audience()).key == ANYONE
    assert (await _asker(directory, "gone", "Dgone").audience()).key == ANYONE
    assert "Dana" not in directory.asked  # a direct message's members are not asked for


async def test_a_channel_is_for_everyone_in_it_bots_left_out() -> None:
    directory = Directory(PEOPLE, {"C1": ["ana", "bo", "bot"]})
    audience = await _asker(directory, "ana", "C1").audience()
    assert audience == Audience.together([ANA, Audience.person(["bo@example.com"])])
    assert audience.may_read(("ana@example.com", "bo@example.com")) and not audience.may_read(
        ("ana@example.com",)
    )
    assert audience.may_read((EVERYONE,)) and audience.may_read(None)


async def test_a_channel_not_everyone_in_which_can_be_named_reads_only_what_everyone_may() -> None:
    for members in (["ana", "nomail"], ["ana", "gone"]):
        directory = Directory(PEOPLE, {"C1": members})
        assert (await _asker(directory, "ana", "C1").audience()).key == ANYONE
    unlisted = Directory(PEOPLE, {})
    assert (await _asker(unlisted, "ana", "C1").audience()).key == ANYONE
    crowded = Directory(PEOPLE, {"C1": ["ana", "bo", "cy"]})
    assert (await _asker(crowded, "ana", "C1", people=People(max_people=2)).audience()).key == ANYONE


async def test_people_and_members_are_kept_a_while_then_asked_again() -> None:
    clock = FakeClock()
    people = People(ttl=600, clock=clock)
    directory = Directory(PEOPLE, {"C1": ["ana", "bo"]})
    await _asker(directory, "ana", "C1", people=people).audience()
    assert sorted(directory.asked) == ["C1", "ana", "bo"]
    await _asker(directory, "bo", "C1", people=people).audience()
    assert len(directory.asked) == 3  # nothing asked again within the TTL
    clock.now += 601
    await _asker(directory, "ana", "C1", people=people).audience()
    assert len(directory.asked) == 6


async def test_a_lookup_that_does_not_end_counts_as_failed() -> None:
    class Stuck(Directory):
        async def members(self, place: str) -> Sequence[str] | None:
            await asyncio.Event().wait()
            return None

    directory = Stuck(PEOPLE)
    people = People(lookup_seconds=0.05)
    assert (await _asker(directory, "ana", "C1", people=people).audience()).key == ANYONE


async def test_the_asker_is_told_when_their_best_matches_hold_what_the_channel_may_not_read(
    embedded: SearchBackend, tmp_path: Path
) -> None:
    hr = Collection(name="hr", title="HR", sources=("x",))
    await embedded.sync_collection(
        hr,
        [
            Passage(
                id="p1",
                collection="hr",
                doc_id="d1",
                source="wiki/1",
                title="Salary bands",
                text="A senior engineer is paid 88,000 euros a year.",
                readers=("ana@example.com", "bo@example.com"),
            ),
            Passage(
                id="p2",
                collection="hr",
                doc_id="d2",
                source="wiki/2",
                title="Pay",
                text="Salaries of engineers are reviewed every March.",
                readers=(EVERYONE,),
            ),
        ],
    )
    service = ResearchService(
        config=CollectionsConfig(collections=(hr,), base_dir=tmp_path),
        backend=embedded,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=30,
    )
    bo, cy = Audience.person(["bo@example.com"]), Audience.person(["cy@example.com"])

    def asked(*people: Audience) -> Question:
        return Question(text="senior engineer salary", allowed=("hr",), audience=Audience.together(people))

    assert await restricted_matches(service, asked(ANA, cy), ANA)  # cy may not read the bands
    assert not await restricted_matches(service, asked(ANA, bo), ANA)  # everyone there may
    assert not await restricted_matches(service, asked(ANA), ANA)  # the asker alone
    assert not await restricted_matches(service, asked(cy, ANA), cy)  # nothing hidden from cy's search
    assert not await restricted_matches(service, asked(ANA, cy), Audience.anyone())
