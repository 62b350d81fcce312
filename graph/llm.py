"""The LLM port. The graph depends on the ``ChatModel`` protocol only; the OpenAI-compatible client
is in ``graph/openai_model.py``, imported only when a model is configured. With no model the context
carries ``None`` and every node takes its extractive path.
"""

import re
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

    async def close(self) -> None: ...


class LLMObserver(Protocol):
    """Where the model client reports each request (``bot/`` turns this into metrics)."""

    def request_finished(
        self, *, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
    ) -> None: ...


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
