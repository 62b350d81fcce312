"""Source loaders: Markdown, plain text, reStructuredText, HTML, PDF, JSONL and Office documents.

Each loader returns ``Document``s made of heading-delimited ``Section``s so the chunker can keep
passages inside one heading. Problems become ``DocumentLoadError`` with a short reason.
"""

import json
import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from retrieval.errors import DocumentLoadError
from retrieval.ingest.html import parse_page
from retrieval.ingest.markdown import parse_markdown, without_link_markup
from retrieval.ingest.rst import parse_rst
from retrieval.text import repair_encoding

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (
    ".md",
    ".markdown",
    ".txt",
    ".text",
    ".rst",
    ".html",
    ".htm",
    ".pdf",
    ".jsonl",
    *(OFFICE_SUFFIXES := (".docx", ".pptx", ".xlsx")),  # retrieval.ingest.office
)


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Document:
    """One logical document. ``passage_id`` is set when the source fixes it (JSONL); ``readers``
    when a connector read who may see it at its source (``retrieval.audience``)."""

    doc_id: str
    source: str
    title: str
    url: str
    sections: tuple[Section, ...]
    passage_id: str | None = None
    readers: tuple[str, ...] | None = None


def load_file(path: Path, *, source: str) -> list[Document]:
    """Load one file; ``source`` is the stable name stored with its passages. Mojibake in its
    titles and text is repaired (``retrieval.text.repair_encoding``)."""
    return [_repaired(document) for document in _load_file(path, source)]


def _repaired(document: Document) -> Document:
    title = repair_encoding(document.title)
    sections = tuple(
        Section(tuple(map(repair_encoding, s.headings)), _title_lines_apart(title, repair_encoding(s.text)))
        for s in document.sections
    )
    return replace(document, title=title, sections=sections)


def _title_lines_apart(title: str, text: str) -> str:
    """``text`` with the lines that open it by repeating its title ("Hayward VA Clinic | VA
    Minneapolis Health Care | Veterans Affairs", as pages scraped with their title are) each a
    block of its own: joined to the next line, a title reads as the start of the first sentence."""
    wanted = " ".join(title.split())
    if not wanted:
        return text
    lines = text.split("\n")
    opening = 0
    while opening < len(lines) - 1 and " ".join(lines[opening].split()) == wanted:
        opening += 1
    if not opening or lines[opening].lstrip()[:1].islower():  # a wrapped sentence goes on
        return text
    return "\n\n".join([*lines[:opening], "\n".join(lines[opening:]).lstrip()])


def _load_file(path: Path, source: str) -> list[Document]:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentLoadError(path=path, reason=f"unsupported file type '{suffix or path.name}'")
    if suffix == ".pdf":
        return [_load_pdf(path, source)]
    if suffix in OFFICE_SUFFIXES:
        from retrieval.ingest.office import load_office  # python-docx, python-pptx, openpyxl

        return [load_office(path, source)]
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DocumentLoadError(path=path, reason="not UTF-8 text") from None
    except OSError as exc:
        raise DocumentLoadError(path=path, reason=f"cannot read ({exc.strerror or 'I/O error'})") from None
    if "\x00" in text:  # valid UTF-8, but no text file holds NUL bytes: binary data under a text name
        raise DocumentLoadError(path=path, reason="not a text file (binary data)")
    if suffix == ".jsonl":
        return _load_jsonl(path, text, source)
    if suffix in (".html", ".htm"):
        title, url, sections = _parse_html(text)
    elif suffix == ".rst":
        title, url, sections = _parse_rst(text)
    elif suffix in (".md", ".markdown"):
        title, url, sections = _parse_markdown(text)
    else:
        title, url, sections = _parse_plain(text)
    if not any(s.text.strip() for s in sections):
        raise DocumentLoadError(path=path, reason="no text")
    return [
        Document(
            doc_id=source,
            source=source,
            title=title or _title_from_name(path),
            url=url,
            sections=tuple(sections),
        )
    ]


def _title_from_name(path: Path) -> str:
    return re.sub(r"[-_]+", " ", path.stem).strip().capitalize() or path.name


def _sections(blocks: Iterable[tuple[int, str]], title: str, *, chapters: bool) -> tuple[str, list[Section]]:
    """Headings (level 1–6) and paragraphs (level 0) as heading-delimited sections: the first
    level-1 heading is the title when there is none, and each heading below it nests under the
    ones above. With ``chapters`` (Markdown, reStructuredText), a level-1 heading after the title is
    the heading of what follows; without (HTML, whose ``h1`` repeats the page's title), it starts
    text under the title alone."""
    sections: list[Section] = []
    headings: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        content = "\n\n".join(parts).strip()
        if content:
            sections.append(Section(tuple(headings), content))
        parts.clear()

    for level, text in blocks:
        if not level:
            parts.append(text)
            continue
        flush()
        if level == 1:
            headings = [text] if chapters and title else []
            title = title or text
            continue
        headings = [*headings[: max(level - 2, 0)], text]
    flush()
    return title, sections


def _parse_markdown(text: str) -> tuple[str, str, list[Section]]:
    page = parse_markdown(text)
    title, sections = _sections(page.blocks, page.title, chapters=True)
    return title, page.url, sections


def _parse_rst(text: str) -> tuple[str, str, list[Section]]:
    title, blocks = parse_rst(text)
    title, sections = _sections(blocks, title, chapters=True)
    return title, "", sections


def _parse_plain(text: str) -> tuple[str, str, list[Section]]:
    body = text.strip()
    first, _, rest = body.partition("\n")
    # A short first line followed by a blank line reads as the document's title.
    if rest.startswith("\n") and len(first) <= 100 and not first.endswith("."):
        return first.strip(), "", [Section((), rest.strip())]
    return "", "", [Section((), body)]


def _parse_html(text: str) -> tuple[str, str, list[Section]]:
    page_title, url, blocks = parse_page(text)
    title, sections = _sections(((b.level, b.text) for b in blocks), page_title, chapters=False)
    return title, url, sections


def _load_pdf(path: Path, source: str) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(path)
            if reader.is_encrypted:
                raise DocumentLoadError(path=path, reason="PDF is encrypted")
            pages = [page.extract_text() or "" for page in reader.pages]
            meta_title = (reader.metadata.title or "") if reader.metadata else ""
    except DocumentLoadError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, IndexError) as exc:
        logger.debug("PDF parse failure", extra={"path": str(path), "error": type(exc).__name__})
        raise DocumentLoadError(path=path, reason="not a readable PDF (corrupt or truncated)") from None
    title = str(meta_title).strip() or _title_from_name(path)
    if pages and pages[0].lstrip().startswith(title):  # the title line printed on the first page
        pages[0] = pages[0].lstrip()[len(title) :]
    sections = [Section((f"Page {n}",), _reflow(text)) for n, text in enumerate(pages, 1) if text.strip()]
    if not sections:
        raise DocumentLoadError(path=path, reason="PDF has no extractable text (scanned image?)")
    return Document(
        doc_id=source,
        source=source,
        title=title,
        url="",
        sections=tuple(sections),
    )


def _reflow(text: str) -> str:
    """Join hard-wrapped PDF lines into paragraphs; keep blank lines as paragraph breaks."""
    text = re.sub(r"-\n(?=[a-z])", "", text)
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _load_jsonl(path: Path, text: str, source: str) -> list[Document]:
    documents: list[Document] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise DocumentLoadError(path=path, reason=f"line {number}: not valid JSON") from None
        if not isinstance(record, dict):
            raise DocumentLoadError(path=path, reason=f"line {number}: expected a JSON object")
        missing = [k for k in ("id", "text") if not isinstance(record.get(k), str) or not record[k].strip()]
        if missing:
            raise DocumentLoadError(path=path, reason=f"line {number}: missing {', '.join(missing)}")
        passage_id = record["id"].strip()
        if passage_id in seen:
            raise DocumentLoadError(path=path, reason=f"line {number}: duplicate id '{passage_id}'")
        seen.add(passage_id)
        title = str(record.get("title") or passage_id)
        documents.append(
            Document(
                doc_id=passage_id,
                source=source,
                title=title,
                url=str(record.get("url") or ""),
                sections=(Section((), without_link_markup(record["text"]).strip()),),
                passage_id=passage_id,
            )
        )
    if not documents:
        raise DocumentLoadError(path=path, reason="no records")
    return documents
