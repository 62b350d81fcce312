"""``confer index``: load every source of a collection, chunk it, and sync the backend.

All files are loaded and chunked before anything is written, and the write is one atomic
``sync_collection``; a file that fails to load is reported by name, and its previously indexed
passages are kept rather than silently removed.
"""

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig, resolve_sources
from retrieval.errors import DocumentLoadError
from retrieval.ingest.chunker import ChunkingSettings, chunk_document
from retrieval.ingest.loaders import Document, load_file
from retrieval.passages import Passage

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[Path], None]


@dataclass
class IndexReport:
    collection: str
    files: int = 0
    documents: int = 0
    passages: int = 0
    added: int = 0
    removed: int = 0
    unchanged: int = 0
    failures: list[DocumentLoadError] = field(default_factory=list)
    # The older text format the collection's index had been made with, and is rebuilt from
    # (``retrieval.passages.TEXT_FORMAT``); ``None`` when it was current or new.
    earlier_format: int | None = None


def source_name(path: Path, base_dir: Path) -> str:
    """A stable name for a file: relative to the collections file's folder when inside it."""
    try:
        return path.resolve().relative_to(base_dir).as_posix()
    except ValueError:
        return path.resolve().as_posix()


async def index_collection(
    backend: SearchBackend,
    collection: Collection,
    config: CollectionsConfig,
    *,
    files: list[Path] | None = None,
    on_file: ProgressCallback | None = None,
    on_embedded: Callable[[int, int], None] | None = None,
    chunking: ChunkingSettings | None = None,
    documents: Sequence[Document] = (),
) -> IndexReport:
    """Bring one collection in the backend up to date with its sources: its files, and the
    ``documents`` its connectors synced. ``on_embedded(done, total)`` follows the embedding of its
    passages (with embeddings on)."""
    files = resolve_sources(collection, config) if files is None else files
    report = IndexReport(collection=collection.name, files=len(files))
    passages: dict[str, Passage] = {}
    failed_sources: list[str] = []
    for path in files:
        source = source_name(path, config.base_dir)
        try:
            loaded = await asyncio.to_thread(load_file, path, source=source)
        except DocumentLoadError as exc:
            logger.warning("skipped %s: %s", path, exc.reason, extra={"collection": collection.name})
            report.failures.append(exc)
            failed_sources.append(source)
        else:
            report.documents += len(loaded)
            for document in loaded:
                for passage in chunk_document(document, collection=collection.name, settings=chunking):
                    passages.setdefault(passage.id, passage)
        if on_file is not None:
            on_file(path)
    report.documents += len(documents)
    for document in documents:
        for passage in chunk_document(document, collection=collection.name, settings=chunking):
            passages.setdefault(passage.id, passage)
    for passage in await backend.passages_from_sources(collection, failed_sources):
        passages.setdefault(passage.id, passage)
    embedding: Callable[[int], None] | None = None
    if on_embedded is not None:
        done = 0
        total = len(passages)

        def embedding(count: int) -> None:
            nonlocal done
            done += count
            on_embedded(done, total)

    stats = await backend.sync_collection(collection, list(passages.values()), progress=embedding)
    report.passages = len(passages)
    report.added, report.removed, report.unchanged = stats.added, stats.removed, stats.unchanged
    report.earlier_format = stats.earlier_format
    return report
