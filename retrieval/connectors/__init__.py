"""Connectors: documents brought from where they live (a web site, a Confluence space) into a collection, by
incremental sync. ``build_connector`` makes one from its entry in the collections file."""

from retrieval.collections import ConfluenceEntry, ConnectorEntry, DriveEntry, SharePointEntry
from retrieval.connectors.base import Change, Connector, FetchResult, KnownDocument, Readers
from retrieval.connectors.http import PoliteClient
from retrieval.connectors.state import SyncState
from retrieval.connectors.sync import SourceReport, stored_documents, sync_source
from retrieval.connectors.web import WebConnector

__all__ = [
    "Change",
    "Connector",
    "FetchResult",
    "KnownDocument",
    "PoliteClient",
    "Readers",
    "SourceReport",
    "SyncState",
    "build_connector",
    "stored_documents",
    "sync_source",
]


def build_connector(
    entry: ConnectorEntry, *, collection: str, client: PoliteClient | None = None
) -> Connector:
    """The connector for one ``sources`` entry; ``client`` replaces its HTTP client (tests).
    Credentials are read from the environment here, when the source needs them."""
    if isinstance(entry, ConfluenceEntry):
        from retrieval.connectors.confluence import ConfluenceConnector
        from retrieval.connectors.credentials import ConfluenceCredentials

        spec = entry.confluence
        return ConfluenceConnector(
            spec=spec,
            collection=collection,
            client=client or PoliteClient(rate=spec.rate),
            credentials=ConfluenceCredentials(),
        )
    if isinstance(entry, SharePointEntry):
        from retrieval.connectors.credentials import SharePointCredentials
        from retrieval.connectors.sharepoint import SharePointConnector

        place = entry.sharepoint
        return SharePointConnector(
            spec=place,
            collection=collection,
            client=client or PoliteClient(rate=place.rate),
            credentials=SharePointCredentials(),
        )
    if isinstance(entry, DriveEntry):
        from retrieval.connectors.credentials import DriveCredentials
        from retrieval.connectors.gdrive import DriveConnector

        folder = entry.gdrive
        return DriveConnector(
            spec=folder,
            collection=collection,
            client=client or PoliteClient(rate=folder.rate),
            credentials=DriveCredentials(),
        )
    web = entry.web
    return WebConnector(spec=web, collection=collection, client=client or PoliteClient(rate=web.rate))
