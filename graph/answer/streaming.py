"""A model-written answer verified as it is written: the answer's JSON string is decoded as it
streams, each sentence is checked as soon as it is complete (the guards at once; the judge, for
what the guards cannot settle, on that sentence or on the few completed while it was busy), and
the verified sentences are released in order, each once every sentence before it is decided. A
sentence is released only once it has passed: nothing unverified is ever handed on, and a
sentence dropped later was never released."""

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from graph.llm.port import ChatModel
from graph.trace import note_dropped
from graph.verify.citations import split_cited
from graph.verify.guards import Reason, check, is_quoted
from graph.verify.judge import Verdict, admit, judge, judgeable
from retrieval.passages import Passage

logger = logging.getLogger(__name__)

_KEY = re.compile(r'"answer"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonStringField:
    """The value of one string field of a JSON object, decoded while the object streams in."""

    def __init__(self, key: re.Pattern[str] = _KEY) -> None:
        self._key = key
        self._raw = ""
        self._at = -1  # where the value's next undecoded character is in ``_raw``
        self._value: list[str] = []
        self.closed = False  # the value's closing quote has come

    @property
    def found(self) -> bool:
        return self._at >= 0

    @property
    def value(self) -> str:
        return "".join(self._value)

    def feed(self, piece: str) -> str:
        """Add a piece of the reply; returns the value decoded so far."""
        self._raw += piece
        if self._at < 0:
            match = self._key.search(self._raw)
            if match is None:
                return ""
            self._at = match.end()
        raw, at = self._raw, self._at
        while at < len(raw) and not self.closed:
            char = raw[at]
            if char == '"':
                self.closed = True
                at += 1
            elif char == "\\":
                if at + 1 >= len(raw):
                    break
                code = raw[at + 1]
                if code == "u":
                    if at + 6 > len(raw):
                        break
                    try:
                        self._value.append(json.loads(f'"{raw[at : at + 6]}"'))
                    except ValueError:
                        self._value.append("\ufffd")
                    at += 6
                else:
                    self._value.append(_ESCAPES.get(code, code))
                    at += 2
            else:
                end = at
                while end < len(raw) and raw[end] not in '"\\':
                    end += 1
                self._value.append(raw[at:end])
                at = end
        self._at = at
        return self.value


@dataclass
class StreamedSentence:
    text: str
    numbers: tuple[int, ...]
    reason: Reason | None = None  # the guards' verdict
    decided: bool = False
    dropped: str | None = None  # why it was dropped, once decided
    verdict: Verdict | None = None


Release = Callable[[StreamedSentence], None]


@dataclass
class SentenceVerifier:
    """Checks each sentence as it completes and releases the verified ones, in order."""

    llm: ChatModel
    sources: dict[int, Passage]
    deadline: float  # time.monotonic() by which judge calls must end
    release: Release
    sentences: list[StreamedSentence] = field(default_factory=list)
    judge_calls: int = 0
    _waiting: list[StreamedSentence] = field(default_factory=list)  # for the judge, not sent yet
    _judging: "asyncio.Task[None] | None" = None
    _released: int = 0

    def add(self, text: str, numbers: tuple[int, ...]) -> None:
        sentence = StreamedSentence(text=text, numbers=numbers)
        self.sentences.append(sentence)
        if not numbers or any(n not in self.sources for n in numbers):
            self._decide(sentence, "unsupported")  # no [n], or one that points nowhere
        else:
            texts = [self.sources[n].text for n in numbers]
            sentence.reason = check(text, texts)
            if sentence.reason is None and is_quoted(text, texts):
                self._decide(sentence, None)  # a whole sentence of its passage: nothing to judge
            elif judgeable(text, sentence.reason):
                self._waiting.append(sentence)
            else:
                self._decide(sentence, sentence.reason)
        self._pump()

    async def finish(self) -> list[StreamedSentence]:
        """Wait for the judge calls still running or waiting (each ends by ``deadline``)."""
        while self._judging is not None:
            await asyncio.shield(self._judging)
        return self.sentences

    def cancel(self) -> None:
        if self._judging is not None:
            self._judging.cancel()

    def _decide(self, sentence: StreamedSentence, dropped: str | None) -> None:
        sentence.decided, sentence.dropped = True, dropped
        if dropped is not None:  # for the trace: its text, why, and what it was checked against
            cited = [self.sources[n] for n in sentence.numbers if n in self.sources]
            note_dropped(sentence.text, dropped, (p.collection for p in cited or self.sources.values()))

    def _pump(self) -> None:
        if self._judging is None and self._waiting:
            batch, self._waiting = self._waiting, []
            self._judging = asyncio.create_task(self._judge(batch), name="confer-judge")
        while self._released < len(self.sentences) and self.sentences[self._released].decided:
            sentence = self.sentences[self._released]
            self._released += 1
            if sentence.dropped is None:
                self.release(sentence)

    async def _judge(self, batch: list[StreamedSentence]) -> None:
        verdicts: list[Verdict] | None = None
        try:
            self.judge_calls += 1
            verdicts = await judge(
                self.llm,
                [(s.text, s.numbers) for s in batch],
                self.sources,
                time_budget=self.deadline - time.monotonic(),
            )
        finally:
            for index, sentence in enumerate(batch):
                verdict = verdicts[index] if verdicts is not None else None
                cited = [self.sources[n] for n in sentence.numbers]
                sentence.verdict = verdict
                self._decide(sentence, admit(sentence.text, cited, sentence.reason, verdict))
            self._judging = None
            with contextlib.suppress(RuntimeError):  # the loop may be closing
                self._pump()


def complete_sentences(text: str, done: int, *, final: bool) -> tuple[list[tuple[str, tuple[int, ...]]], int]:
    """The sentences of ``text`` after the first ``done`` that are complete (another one has begun
    after them, or the text is ``final``), and how many are done now."""
    parts = split_cited(text)
    upto = len(parts) if final else max(done, len(parts) - 1)
    return parts[done:upto], upto


def sentences_of(items: Sequence[StreamedSentence]) -> list[StreamedSentence]:
    return [s for s in items if s.decided and s.dropped is None]
