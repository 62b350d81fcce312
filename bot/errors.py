"""Errors of the composition root that ``bot/messages.py`` words for people."""

from retrieval.errors import ConferError


class DatasetError(ConferError):
    """A benchmark directory lacks a file or holds malformed questions."""


class EmptyQuestionError(ConferError):
    """The question had no text once ``in:`` targets were taken out."""


class ChatCallError(ConferError):
    """A chat platform refused a post or an edit for good (after its retries)."""

    def __init__(self, *, method: str, error: str) -> None:
        self.method = method
        self.error = error
        super().__init__(f"{method}: {error}")
