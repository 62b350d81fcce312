"""The LLM port. The graph depends on this protocol only; ``bot/`` builds the client.

With no model configured the context carries ``None`` and every node takes its extractive path.
"""

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
