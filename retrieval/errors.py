"""Errors of the retrieval layer; the base ``ConferError`` lives here because every layer uses it.

Errors carry structured fields; only ``bot/messages.py`` turns them into words for people.
"""

from pathlib import Path


class ConferError(Exception):
    """Base of every error Confer raises on purpose."""


class CollectionsFileError(ConferError):
    """The collections file is missing, malformed or inconsistent."""

    def __init__(self, *, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


class DocumentLoadError(ConferError):
    """One source file could not be read or parsed."""

    def __init__(self, *, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class RetrievalError(ConferError):
    """A search backend could not answer for a collection."""

    def __init__(self, *, collection: str, reason: str) -> None:
        self.collection = collection
        self.reason = reason
        super().__init__(f"{collection}: {reason}")


class SearchUnavailableError(RetrievalError):
    """The backend is down, refused the request, or timed out."""


class CollectionNotIndexedError(RetrievalError):
    """The collection exists in the collections file but has never been indexed."""


class IndexingError(ConferError):
    """Writing a collection's passages failed; the previous index is left as it was."""

    def __init__(self, *, collection: str, reason: str) -> None:
        self.collection = collection
        self.reason = reason
        super().__init__(f"{collection}: {reason}")


class EmbeddingError(ConferError):
    """The embedder could not embed: an endpoint down or refusing, or a model that fails to load."""

    def __init__(self, *, model: str, reason: str) -> None:
        self.model = model
        self.reason = reason
        super().__init__(f"{model}: {reason}")


class DataDirError(ConferError):
    """The folder of the embedded index (and the state beside it) cannot be created or written."""

    def __init__(self, *, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")
