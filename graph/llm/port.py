"""The LLM port. The graph depends on the ``ChatModel`` protocol only; the OpenAI-compatible client
is in ``graph/llm/openai_client.py``, imported only when a model is configured. With no model the context
carries ``None`` and every node takes its extractive path.
"""

import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Protocol, TypeVar

from pydantic import BaseModel

from retrieval.errors import ConferError

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class LLMError(ConferError):
    """The model failed, timed out, or answered with something unusable."""

    def __init__(self, *, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ChatModel(Protocol):
    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        """One chat completion parsed into ``schema``; raises ``LLMError``."""
        ...

    def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        """One JSON-mode chat completion, its content yielded piece by piece as the model writes
        it; raises ``LLMError`` (before or between pieces)."""
        ...

    async def close(self) -> None: ...


class LLMObserver(Protocol):
    """Where the model client reports each request (``bot/`` turns this into metrics)."""

    def request_finished(
        self, *, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
    ) -> None: ...

    def breaker_tripped(self, *, reason: str, seconds: float) -> None:
        """The model breaker opened (it was closed): nothing is sent for ``seconds``."""
        ...

    def request_skipped(self, *, reason: str) -> None:
        """A call was not sent: the breaker is open."""
        ...


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def extract_json(content: str) -> str:
    """The JSON object in a reply, tolerating code fences and text around it."""
    stripped = _FENCE.sub("", content.strip()).strip()
    if stripped.startswith("{"):
        return stripped
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object")
    return stripped[start : end + 1]


# Reasons after which a question stops asking the model: it is stalled, refusing, or out of time.
GIVE_UP_REASONS = frozenset({"stalled", "rate_limited", "breaker_open", "deadline"})


class ModelBreaker(Protocol):
    """Process-wide (or, through Redis, deployment-wide) memory that the model is stalled or rate
    limited: while open, no request is sent; once its time has passed, one caller probes."""

    async def allows(self) -> bool:
        """Whether a request may go out now (when the open time has passed, only one probe does)."""
        ...

    async def trip(self, *, seconds: float, reason: str) -> bool:
        """Open for ``seconds``; True when it was closed (the caller logs that, once)."""
        ...

    async def reset(self) -> None:
        """The model answered: close."""
        ...

    async def close(self) -> None: ...


class LocalBreaker:
    """The in-process ``ModelBreaker``. After its open time one caller is let through as a probe;
    the others keep skipping the model until the probe answers or ``probe_seconds`` pass."""

    def __init__(self, *, probe_seconds: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._probe = probe_seconds
        self._until = 0.0
        self._tripped = False

    async def allows(self) -> bool:
        now = self._clock()
        if now < self._until:
            return False
        if self._tripped:  # half-open: this caller probes, the others wait for its answer
            self._until = now + self._probe
        return True

    async def trip(self, *, seconds: float, reason: str) -> bool:
        was_closed = not self._tripped
        self._tripped = True
        self._until = max(self._until if not was_closed else 0.0, self._clock() + seconds)
        return was_closed

    async def reset(self) -> None:
        self._tripped = False
        self._until = 0.0

    async def close(self) -> None:
        return None


class QuestionModel:
    """One question's view of the model: every call ends by the question's model deadline, and
    once the model stalled, refused (429), was skipped by the breaker or ran out of time, the
    question asks it nothing more (a stalled provider costs a question one wait, not one per
    stage; a rate-limited one gets at most one more refused request per question)."""

    def __init__(self, inner: ChatModel, *, deadline: float | None) -> None:
        self._inner = inner
        self.deadline = deadline
        self.given_up: str | None = None

    def remaining(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def _budget(self, time_budget: float) -> float:
        if self.given_up is not None:
            raise LLMError(reason=self.given_up)
        budget = min(time_budget, self.remaining())
        if budget <= 0:
            raise LLMError(reason="deadline")
        return budget

    def _failed(self, error: LLMError) -> None:
        if error.reason in GIVE_UP_REASONS and self.given_up is None:
            self.given_up = error.reason

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        try:
            return await self._inner.complete_json(
                system=system, user=user, schema=schema, time_budget=self._budget(time_budget)
            )
        except LLMError as error:
            self._failed(error)
            raise

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        try:
            async for piece in self._inner.stream_text(
                system=system, user=user, time_budget=self._budget(time_budget)
            ):
                yield piece
        except LLMError as error:
            self._failed(error)
            raise

    async def close(self) -> None:
        """The process's model is closed by its owner."""
