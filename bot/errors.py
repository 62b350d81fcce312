"""Errors of the composition root that ``bot/messages.py`` words for people."""

from retrieval.errors import ConferError


class DatasetError(ConferError):
    """A benchmark directory lacks a file or holds malformed questions."""


class EmptyQuestionError(ConferError):
    """The question had no text once ``in:`` targets were taken out."""
