"""A fetched file's bytes as ``Document``s: a web page by its main text (trafilatura leaves out
navigation, headers, footers and other boilerplate), any other type by the loader of its kind."""

import hashlib
import json
import logging
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from urllib.parse import urlsplit

from retrieval.errors import DocumentLoadError
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES, Document, load_file

logger = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A media type named by a server, as the suffix the loaders know it by.
SUFFIXES = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-rst": ".rst",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}


def suffix_for(media_type: str, name: str) -> str | None:
    """The loader suffix for a file of ``media_type`` called ``name``, or ``None`` if unreadable."""
    if media_type in HTML_TYPES:
        return ".html"
    suffix = Path(name.split("?")[0]).suffix.lower()
    if suffix in SUPPORTED_SUFFIXES and suffix not in (".html", ".htm"):
        return suffix
    return SUFFIXES.get(media_type)


def convert(
    content: bytes, *, suffix: str, source: str, url: str, main_text: bool = True, name: str = ""
) -> tuple[Document, ...]:
    """Documents of one fetched file, stored under ``source`` and cited at ``url``; a document with
    no title of its own is titled by ``name`` (its file name), or else by the address's last segment.
    HTML is a web page whose main text is extracted unless ``main_text`` is false (a page body with
    no navigation around it).

    Raises ``DocumentLoadError`` (with the source's name as its path) when nothing readable is in it.
    """
    if suffix == ".html" and main_text:
        return (_page(content, source=source, url=url),)
    with tempfile.TemporaryDirectory(prefix="confer-") as folder:
        stem = Path(name.replace("/", "-")).stem if name else Path(urlsplit(url).path).stem or "document"
        path = Path(folder) / f"{stem[:100]}{suffix}"
        path.write_bytes(content)
        try:
            documents = load_file(path, source=source)
        except DocumentLoadError as exc:
            raise DocumentLoadError(path=Path(source), reason=exc.reason) from None
    return tuple(replace(d, url=url) for d in documents)


def _page(content: bytes, *, source: str, url: str) -> Document:
    import trafilatura

    html = content.decode("utf-8", errors="replace")
    main = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_formatting=True,
        include_links=False,
        include_comments=False,
        include_images=False,
    )
    if not main or not main.strip():
        raise DocumentLoadError(path=Path(source), reason="no main text on the page")
    if not main.lstrip().startswith("# "):
        metadata = trafilatura.extract_metadata(html, default_url=url)
        heading = metadata.title if metadata is not None and metadata.title else ""
        if heading:
            main = f"# {heading}\n\n{main}"
    with tempfile.TemporaryDirectory(prefix="confer-") as folder:
        path = Path(folder) / "page.md"
        path.write_text(main, encoding="utf-8")
        (document,) = load_file(path, source=source)
    return replace(document, url=url)


def stored_form(document: Document) -> dict[str, object]:
    """A document as the sync state stores it: its readers are stored beside it, not in it."""
    found = asdict(document)
    del found["readers"]
    return found


def digest_of_documents(documents: tuple[Document, ...]) -> str:
    """What tells a document fetched again with the same text from one that changed."""
    payload = json.dumps([stored_form(d) for d in documents], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]
