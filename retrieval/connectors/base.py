"""What every connector offers the sync (``retrieval.connectors.sync``), and what it hands back.

A connector brings one source's documents (a web site, a Confluence space, a drive) into a
collection. Its one interface: list the changes since a cursor, fetch one document, list what
exists (so that what is gone is deleted), and say who may read a document.
"""

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from retrieval.ingest.loaders import Document

# Who may read a document at its source (users and groups as the source names them, groups the source
# can list expanded to their members; ``retrieval.audience.EVERYONE`` for anyone); ``None`` is everyone
# who may search the collection (a source without ``permissions: true``).
Readers = tuple[str, ...] | None


@dataclass(frozen=True)
class KnownDocument:
    """What the last sync stored of a document: enough to ask the source whether it changed."""

    doc_id: str
    version: str  # the source's own validator: an ETag and Last-Modified, a version number
    digest: str  # of the text stored, to tell a changed document from one fetched again
    fetched_from: str = ""  # the address it was fetched at, when its id is another (a canonical URL)
    related: tuple[str, ...] = ()  # what it points to (a page's links), for a crawl that skips its body


@dataclass(frozen=True)
class Change:
    """One entry of a source's change list: a document to fetch (new or perhaps changed) or one that
    was deleted. ``cursor``, when set, is where to list from next time once this change is applied;
    an entry with no ``doc_id`` carries only that cursor."""

    doc_id: str
    ref: str = ""  # how the connector fetches it (an address, an item id); default ``doc_id``
    deleted: bool = False
    cursor: str | None = None


@dataclass(frozen=True)
class FetchResult:
    """A fetch's outcome: the document's new contents, unchanged since ``known`` (an HTTP 304), or
    gone (deleted, or not a document Confer can read)."""

    status: Literal["fetched", "unchanged", "gone"]
    doc_id: str
    version: str = ""
    documents: tuple[Document, ...] = ()
    fetched_from: str = ""
    related: tuple[str, ...] = ()
    readers: Readers = None
    detail: str = field(default="", compare=False)  # why it is gone, for the log


class Connector(Protocol):
    """One source of one collection. Raises ``SourceError`` for anything that stops its sync."""

    @property
    def key(self) -> str:
        """Stable name of the source within its collection (the cursor and documents are stored
        under it): its kind and address."""
        ...

    @property
    def label(self) -> str:
        """How the source is shown to people: its kind and address."""
        ...

    @property
    def permissions(self) -> bool:
        """Whether each document's readers are read from the source (``permissions: true``): its
        fetches say who may read it, and ``readers`` asks again for a document not fetched."""
        ...

    async def check(self) -> None:
        """Raise ``SourceError`` unless the source answers with the credentials given."""
        ...

    def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        """The changes since ``cursor`` (all documents when ``None``), given what is stored."""
        ...

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        """One document's contents, asked for conditionally when ``known``."""
        ...

    async def readers(self, doc_id: str) -> Readers:
        """Who may read a stored document now (permissions change without its text changing)."""
        ...

    async def existing(self) -> set[str] | None:
        """Every document id the source holds now, after ``changes`` was read to its end; ``None``
        when the change list reports deletions itself (or could not see everything)."""
        ...

    async def close(self) -> None: ...
