"""Errors of the retrieval layer; the base ``ConferError`` lives here because every layer uses it.

Errors carry structured fields; only ``bot/messages.py`` turns them into words for people.
"""

from pathlib import Path
from typing import Literal


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


SourceProblem = Literal["unreachable", "refused", "not_found", "rate_limited", "credentials", "interrupted"]


class SourceError(ConferError):
    """A connector's source (a web site, a Confluence space, a drive) could not be synced: what went
    wrong as a ``problem`` that names what to fix, and a short ``detail`` (a status, an OS error)."""

    def __init__(self, *, collection: str, source: str, problem: SourceProblem, detail: str = "") -> None:
        self.collection = collection
        self.source = source
        self.problem = problem
        self.detail = detail
        super().__init__(f"{collection}: {source}: {problem} {detail}".strip())
