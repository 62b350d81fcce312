"""What connectors have synced: per source, its cursor and each document's version and contents.

One SQLite file beside the embedded index. Each document is committed as soon as it is fetched, so
a sync that stops half-way resumes from there (what it fetched is asked for again only
conditionally), and a document is stored under its id once: fetched again, it replaces itself.
"""

import json
import sqlite3
from pathlib import Path
from typing import Any

from retrieval.connectors.base import KnownDocument, Readers
from retrieval.connectors.convert import digest_of_documents, stored_form
from retrieval.errors import DataDirError
from retrieval.ingest.loaders import Document, Section

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    source TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    fetched_from TEXT NOT NULL,
    related TEXT NOT NULL,
    readers TEXT,
    documents TEXT NOT NULL,
    PRIMARY KEY (source, doc_id)
);
CREATE TABLE IF NOT EXISTS cursors (source TEXT PRIMARY KEY, cursor TEXT NOT NULL);
"""


class SyncState:
    """The store; ``source`` keys name a collection and one of its connectors."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise DataDirError(path=path, reason=f"cannot write the sync state ({exc})") from exc

    def cursor(self, source: str) -> str | None:
        row = self._db.execute("SELECT cursor FROM cursors WHERE source = ?", (source,)).fetchone()
        return str(row[0]) if row else None

    def set_cursor(self, source: str, cursor: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO cursors (source, cursor) VALUES (?, ?)", (source, cursor))

    def known(self, source: str) -> dict[str, KnownDocument]:
        rows = self._db.execute(
            "SELECT doc_id, version, digest, fetched_from, related FROM documents WHERE source = ?",
            (source,),
        )
        return {
            doc_id: KnownDocument(doc_id, version, digest, fetched_from, tuple(json.loads(related)))
            for doc_id, version, digest, fetched_from, related in rows
        }

    def put(
        self,
        source: str,
        known: KnownDocument,
        documents: tuple[Document, ...],
        readers: Readers,
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                source,
                known.doc_id,
                known.version,
                known.digest,
                known.fetched_from,
                json.dumps(list(known.related)),
                None if readers is None else json.dumps(list(readers)),
                json.dumps([stored_form(d) for d in documents]),
            ),
        )

    def readers(self, source: str, doc_id: str) -> Readers:
        row = self._db.execute(
            "SELECT readers FROM documents WHERE source = ? AND doc_id = ?", (source, doc_id)
        ).fetchone()
        return None if row is None or row[0] is None else tuple(json.loads(row[0]))

    def set_readers(self, source: str, doc_id: str, readers: Readers) -> str:
        """Record who may read a stored document now (its text unchanged); its new digest."""
        row = self._db.execute(
            "SELECT documents FROM documents WHERE source = ? AND doc_id = ?", (source, doc_id)
        ).fetchone()
        documents = tuple(_document(item) for item in json.loads(row[0])) if row else ()
        digest = document_digest(documents, readers)
        self._db.execute(
            "UPDATE documents SET readers = ?, digest = ? WHERE source = ? AND doc_id = ?",
            (None if readers is None else json.dumps(list(readers)), digest, source, doc_id),
        )
        return digest

    def touch(self, source: str, known: KnownDocument) -> None:
        """Record a document's new version and links when its text did not change."""
        self._db.execute(
            "UPDATE documents SET version = ?, fetched_from = ?, related = ? WHERE source = ? AND doc_id = ?",
            (known.version, known.fetched_from, json.dumps(list(known.related)), source, known.doc_id),
        )

    def delete(self, source: str, doc_id: str) -> bool:
        cursor = self._db.execute("DELETE FROM documents WHERE source = ? AND doc_id = ?", (source, doc_id))
        return cursor.rowcount > 0

    def documents(self, source: str) -> list[Document]:
        """Every stored document of ``source``, in a stable order, with who may read it."""
        rows = self._db.execute(
            "SELECT documents, readers FROM documents WHERE source = ? ORDER BY doc_id", (source,)
        ).fetchall()
        return [
            _document(item, None if readers is None else tuple(json.loads(readers)))
            for payload, readers in rows
            for item in json.loads(payload)
        ]

    def close(self) -> None:
        self._db.close()


def document_digest(documents: tuple[Document, ...], readers: Readers) -> str:
    """What tells a document fetched again from one that changed: its text, and who may read it."""
    return digest_of_documents(documents) + ("" if readers is None else str(tuple(readers)))


def _document(item: dict[str, Any], readers: Readers = None) -> Document:
    sections = tuple(Section(tuple(s["headings"]), s["text"]) for s in item["sections"])
    return Document(
        doc_id=item["doc_id"],
        source=item["source"],
        title=item["title"],
        url=item["url"],
        sections=sections,
        passage_id=item.get("passage_id"),
        readers=readers,
    )
