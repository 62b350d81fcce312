"""The chat core's one intake, driven as a third platform would drive it: a parsed message in, what
happened out, and what reached the thread."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot import messages
from bot.chat.access import PlaceDeniedError
from bot.chat.conversations import Conversations
from bot.chat.dedupe import build_deduplicator
from bot.chat.intake import Delivery, Intake, Message, Opener
from bot.chat.memory import ThreadKey, build_thread_memory
from bot.chat.progress import StatusState
from bot.chat.render import AnswerFooter
from bot.chat.scheduler import QuestionScheduler
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph.context import ResearchLimits
from graph.models import Answer, Question
from graph.research.followup import PriorTurn
from retrieval.backends import SearchBackend
from retrieval.collections import ChannelPolicy, CollectionsConfig
from retrieval.ingest.pipeline import index_collection


@dataclass
class RecordingThread:
    """A thread of a platform that only records what it was asked to show."""

    answers: list[Answer] = field(default_factory=list)
    said: list[str] = field(default_factory=list)

    async def post_status(self, state: StatusState) -> None:
        pass

    async def edit_status(self, state: StatusState) -> None:
        pass

    async def post_answer(self, answer: Answer, footer: AnswerFooter | None = None) -> None:
        self.answers.append(answer)

    async def say(self, text: str) -> None:
        self.said.append(text)


@dataclass
class History:
    """What the platform shows of a thread Confer has not answered in."""

    people_wrote: list[str]
    read: int = 0

    async def posted(self) -> bool:
        return False

    async def earlier(self) -> list[PriorTurn]:
        self.read += 1
        return [PriorTurn(question=text) for text in self.people_wrote]


def opener_for(thread: RecordingThread, opened: list[Question]) -> Opener:
    @contextlib.asynccontextmanager
    async def open_thread(question: Question) -> AsyncIterator[Delivery | None]:
        opened.append(question)
        yield Delivery(thread, status_interval=0.01)

    return open_thread


@pytest.fixture
async def intake(
    embedded: SearchBackend, sample_config: CollectionsConfig, tmp_path: Path
) -> AsyncIterator[Intake]:
    config = sample_config.model_copy(
        update={
            "channels": {
                "C-ENG": ChannelPolicy(allow=("engineering",)),
                "C-ALL": ChannelPolicy(allow=sample_config.names),
            }
        }
    )
    for collection in config.collections:
        await index_collection(embedded, collection, config)
    metrics = build_metrics()
    service = ResearchService(
        config=config, backend=embedded, metrics=metrics, limits=ResearchLimits(), question_timeout=30
    )
    memory = await build_thread_memory(data_dir=tmp_path, database_url=None, ttl_days=1)
    built = Intake(
        service=service,
        scheduler=QuestionScheduler(max_concurrent=2),
        dedupe=build_deduplicator(redis_url=None, ttl=60, metrics=metrics),
        metrics=metrics,
        conversations=Conversations(memory=memory, metrics=metrics),
    )
    yield built
    await built.scheduler.drain(5)
    await memory.close()


async def _settled(intake: Intake) -> None:
    await intake.scheduler.drain(30)


async def test_a_question_is_answered_in_its_thread_once_and_remembered_there(intake: Intake) -> None:
    thread, opened = RecordingThread(), list[Question]()
    key = ThreadKey("chat", "team", "C-ALL", "t1")
    message = Message(
        text="I lost my laptop on a business trip",
        place="C-ALL",
        surface="mention",
        key=key,
        delivery="e1",
    )
    first = await intake.take(message, opener_for(thread, opened))
    again = await intake.take(message, opener_for(thread, opened))
    await _settled(intake)
    assert (first.outcome, again.outcome) == ("queued", "duplicate")
    assert len(thread.answers) == 1 and thread.answers[0].citations
    assert [q.text for q in opened] == ["I lost my laptop on a business trip"]
    assert intake.conversations is not None
    turns = await intake.conversations.history(key)
    assert [t.asked for t in turns] == ["I lost my laptop on a business trip"]
    assert turns[0].answer  # the answer was kept with the question


async def test_commands_policy_and_suggestions_are_settled_before_anything_is_queued(intake: Intake) -> None:
    thread, opened = RecordingThread(), list[Question]()
    open_thread = opener_for(thread, opened)

    def message(text: str, place: str = "C-ENG", **extra: object) -> Message:
        return Message(text=text, place=place, surface="teams", key=None, commands=True, **extra)  # type: ignore[arg-type]

    assert (await intake.take(message("help"), open_thread)).outcome == "usage"
    listing = await intake.take(message("list"), open_thread, neutralize=str.upper)
    assert listing.outcome == "listing" and "ENGINEERING" in listing.text.upper()
    assert "security" not in listing.text.lower()  # only what the channel may search
    denied = await intake.take(message("list", place="C-ELSEWHERE"), open_thread)
    assert isinstance(denied.refusal, PlaceDeniedError)
    refused = await intake.take(message("in:security how do I report a lost key?"), open_thread)
    assert refused.outcome == "refused" and refused.refusal is not None
    assert "security" in messages.collection_access(refused.refusal)
    once = {"once": "suggest:t1:how do we deploy"}
    assert (await intake.take(message("How do we deploy?", **once), open_thread)).outcome == "queued"
    assert (await intake.take(message("How do we deploy?", **once), open_thread)).outcome == "already_asked"
    await _settled(intake)
    assert [q.text for q in opened] == ["How do we deploy?"]  # nothing else reached a thread
    assert len(thread.answers) == 1


async def test_a_reply_is_taken_only_in_a_thread_confer_answered(intake: Intake) -> None:
    thread, opened = RecordingThread(), list[Question]()
    key = ThreadKey("chat", "team", "C-ALL", "t2")
    reply = Message(
        text="and for contractors?", place="C-ALL", surface="followup", key=key, followup_only=True
    )
    assert (await intake.take(reply, opener_for(thread, opened))).outcome == "not_ours"
    assert opened == []


async def test_a_mention_in_a_thread_reads_what_people_wrote_before_it(intake: Intake) -> None:
    thread, opened = RecordingThread(), list[Question]()
    history = History(["we are expecting a baby, so I am planning my parental leave"])
    key = ThreadKey("chat", "team", "C-ALL", "t3")
    message = Message(
        text="how many weeks can I take?", place="C-ALL", surface="mention", key=key, history=history
    )
    assert (await intake.take(message, opener_for(thread, opened))).outcome == "queued"
    await _settled(intake)
    assert history.read == 1
    assert len(thread.answers) == 1
    assert intake.conversations is not None
    (turn,) = await intake.conversations.history(key)
    assert turn.asked == "how many weeks can I take?"
    assert "parental" in turn.question.lower()  # understood with what was written before it


async def test_nothing_new_is_taken_while_shutting_down(intake: Intake) -> None:
    await intake.scheduler.drain(1)
    thread, opened = RecordingThread(), list[Question]()
    message = Message(text="How do we deploy?", place="C-ALL", surface="dm", key=None)
    assert (await intake.take(message, opener_for(thread, opened))).outcome == "shutting_down"
    await asyncio.sleep(0)
    assert opened == []


async def test_a_thread_that_cannot_be_read_still_gets_its_answer(
    intake: Intake, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the rewrite failed")

    assert intake.conversations is not None
    monkeypatch.setattr(intake.conversations, "prepare", broken)
    thread, opened = RecordingThread(), list[Question]()
    key = ThreadKey("chat", "team", "C-ALL", "t4")
    message = Message(text="I lost my laptop on a business trip", place="C-ALL", surface="mention", key=key)
    assert (await intake.take(message, opener_for(thread, opened))).outcome == "queued"
    await _settled(intake)
    assert len(thread.answers) == 1 and thread.answers[0].citations  # answered as asked
    assert "answering it as asked" in caplog.text
