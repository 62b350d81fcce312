"""``confer index``'s connectors: every source checked before anything is written, then synced
with a live line each (``retrieval.connectors``), their state kept beside the embedded index."""

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, TaskID

from bot import messages
from retrieval.collections import Collection, CollectionsConfig
from retrieval.connectors import SourceReport, SyncState, build_connector, stored_documents, sync_source
from retrieval.errors import SourceError
from retrieval.ingest.loaders import Document

STATE_FILE = "connectors.sqlite3"  # under CONFER_DATA_DIR


def say_unusable(config: CollectionsConfig, names: Sequence[str], say: Callable[[str], None]) -> set[str]:
    """The collections of ``names`` (all without) left out for a misconfigured source entry, each
    said in one line naming what to fix, before anything is written."""
    left_out = {c.name for c in config.unusable if not names or c.name in names}
    for collection in config.unusable:
        if collection.name in left_out:
            say(messages.collection_unusable(collection.name, collection.problems, config.path.name))
    return left_out


class ConnectorSyncs:
    """The connectors of the collections being indexed, and the state their syncs keep."""

    def __init__(self, data_dir: Path, collections: Sequence[Collection]) -> None:
        self.data_dir = data_dir
        self.connectors = {
            c.name: [build_connector(entry, collection=c.name) for entry in c.connectors] for c in collections
        }
        self._state: SyncState | None = None

    @property
    def state(self) -> SyncState:
        if self._state is None:
            self._state = SyncState(self.data_dir / STATE_FILE)
        return self._state

    async def check(self, say: Callable[[str], None]) -> set[str]:
        """The collections with a source that cannot be synced, each problem said in one line."""
        broken: set[str] = set()
        for name, connectors in self.connectors.items():
            for connector in connectors:
                try:
                    await connector.check()
                except SourceError as exc:
                    say(messages.describe_error(exc))
                    broken.add(name)
        return broken

    async def sync(
        self, collection: Collection, progress: Progress, lines: Console, say: Callable[[str], None]
    ) -> tuple[list[Document], bool]:
        """Every source of ``collection`` synced, with a live line each: the documents they hold
        now, and whether every sync ran to its end (one that stopped keeps what it applied)."""
        documents: list[Document] = []
        complete = True
        for connector in self.connectors[collection.name]:
            title = f"{collection.title}: {connector.label}"
            task = progress.add_task(title, total=None)

            def advance(report: SourceReport, task: TaskID = task) -> None:
                progress.update(task, completed=report.seen)

            try:
                report = await sync_source(
                    connector, self.state, collection=collection.name, on_progress=advance
                )
            except SourceError as exc:
                say(messages.describe_error(exc))
                complete = False
            else:
                line = messages.index_source_report(
                    collection.name,
                    report.label,
                    added=report.added,
                    changed=report.changed,
                    unchanged=report.unchanged,
                    deleted=report.deleted,
                )
                lines.print(line, markup=False, highlight=False)
            progress.update(task, visible=False)
            documents.extend(stored_documents(self.state, collection.name, connector))
        return documents, complete

    async def close(self) -> None:
        for connectors in self.connectors.values():
            for connector in connectors:
                await connector.close()
        if self._state is not None:
            self._state.close()
