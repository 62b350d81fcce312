"""A source's incremental sync: its changes since the stored cursor applied to the stored documents.

Each document is stored as soon as it is fetched and the cursor moves only past changes applied, so
a sync that stops half-way (an error, Ctrl-C) resumes where it was; a document is stored under its
id, so fetching it again replaces it, and the passages built from the store never hold a document
twice nor in two versions. Deletions: those the change list reports, those a fetch finds gone, and
(once the listing is complete) every stored document the source no longer lists. With permissions,
every stored document not fetched is asked who may read it now (a restriction added to a page does
not change its text), and one whose readers changed is stored so (counted as changed).
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from retrieval.connectors.base import Connector, FetchResult, KnownDocument
from retrieval.connectors.state import SyncState, document_digest
from retrieval.ingest.loaders import Document

logger = logging.getLogger(__name__)


@dataclass
class SourceReport:
    """What one sync of one source did; ``seen`` counts the changes listed so far."""

    label: str
    seen: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0


ProgressCallback = Callable[[SourceReport], None]


def state_key(collection: str, connector: Connector) -> str:
    return f"{collection}/{connector.key}"


async def sync_source(
    connector: Connector,
    state: SyncState,
    *,
    collection: str,
    on_progress: ProgressCallback | None = None,
) -> SourceReport:
    """Bring the stored documents of one source up to date. Raises ``SourceError``; what was
    applied before it stays applied."""
    key = state_key(collection, connector)
    known = state.known(key)
    report = SourceReport(label=connector.label)
    fetched: set[str] = set()
    async for change in connector.changes(state.cursor(key), known):
        if not change.doc_id:
            pass  # only a cursor: where the listing got to
        elif change.deleted:
            report.seen += 1
            if state.delete(key, change.doc_id):
                known.pop(change.doc_id, None)
                report.deleted += 1
        else:
            report.seen += 1
            result = await connector.fetch(change, known.get(change.doc_id))
            fetched.add(result.doc_id)
            _apply(result, state, key, known, report)
        if change.cursor is not None:
            state.set_cursor(key, change.cursor)
        if on_progress is not None:
            on_progress(report)
    present = await connector.existing()
    if present is not None:
        for doc_id in sorted(set(known) - present):
            if state.delete(key, doc_id):
                known.pop(doc_id, None)
                report.deleted += 1
    for doc_id in sorted(set(known) - fetched):
        # Without permissions every document is everyone's: readers a former sync stored go.
        readers = await connector.readers(doc_id) if connector.permissions else None
        if readers != state.readers(key, doc_id):
            known[doc_id] = replace(known[doc_id], digest=state.set_readers(key, doc_id, readers))
            report.changed += 1
            if on_progress is not None:
                on_progress(report)
    if on_progress is not None:
        on_progress(report)
    return report


def _apply(
    result: FetchResult, state: SyncState, key: str, known: dict[str, KnownDocument], report: SourceReport
) -> None:
    prior = known.get(result.doc_id)
    if result.status == "gone":
        logger.info("gone: %s", result.detail, extra={"source": key})
        if state.delete(key, result.doc_id):
            known.pop(result.doc_id, None)
            report.deleted += 1
        return
    if result.status == "unchanged":
        report.unchanged += 1
        return
    digest = document_digest(result.documents, result.readers)
    record = KnownDocument(result.doc_id, result.version, digest, result.fetched_from, result.related)
    if prior is not None and prior.digest == digest:
        if prior != record:
            state.touch(key, record)
            known[result.doc_id] = record
        report.unchanged += 1
        return
    state.put(key, record, result.documents, result.readers)
    known[result.doc_id] = record
    if prior is None:
        report.added += 1
    else:
        report.changed += 1


def stored_documents(state: SyncState, collection: str, connector: Connector) -> list[Document]:
    """The documents of one source as the last sync left them, named by the source's label."""
    return state.documents(state_key(collection, connector))
