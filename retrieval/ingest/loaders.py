"""Source loaders: Markdown, plain text, reStructuredText, HTML, PDF and JSONL.

Each loader returns ``Document``s made of heading-delimited ``Section``s so the chunker can keep
passages inside one heading. Problems become ``DocumentLoadError`` with a short reason.
"""

import json
import logging
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.element import Tag

from retrieval.errors import DocumentLoadError
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
)


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Document:
    """One logical document. ``passage_id`` is set when the source fixes it (JSONL)."""

    doc_id: str
    source: str
    title: str
    url: str
    sections: tuple[Section, ...]
    passage_id: str | None = None


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
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DocumentLoadError(path=path, reason="not UTF-8 text") from None
    except OSError as exc:
        raise DocumentLoadError(path=path, reason=f"cannot read ({exc.strerror or 'I/O error'})") from None
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


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """Simple ``key: value`` front matter between ``---`` lines (title, url)."""
    match = re.match(r"\A---\s*\n(.*?)\n---\s*\n", text, re.DOTALL)
    if not match:
        return {}, text
    meta: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta, text[match.end() :]


def _parse_markdown(text: str) -> tuple[str, str, list[Section]]:
    meta, body = _front_matter(text)
    title = meta.get("title", "")
    sections: list[Section] = []
    headings: list[str] = []
    lines: list[str] = []
    in_fence = False

    def flush() -> None:
        content = "\n".join(lines).strip()
        if content:
            sections.append(Section(tuple(headings), content))
        lines.clear()

    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        match = None if in_fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if match:
            flush()
            level = len(match.group(1))
            heading = _strip_markdown(match.group(2))
            if level == 1 and not title:
                title = heading
                headings = []
                continue
            headings = [*headings[: max(level - 2, 0)], heading]
            continue
        lines.append(_strip_markdown(line))
    flush()
    return title, meta.get("url", ""), sections


def _strip_markdown(line: str) -> str:
    line = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", line)
    line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)
    line = re.sub(r"(\*\*|__|`)", "", line)
    line = re.sub(r"^\s*>\s?", "", line)
    line = re.sub(r"^\s*\|?\s*:?-{3,}.*$", "", line)
    return line.replace("|", " ").rstrip()


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


def _parse_rst(text: str) -> tuple[str, str, list[Section]]:
    raw = text.splitlines()
    title = ""
    sections: list[Section] = []
    levels: list[str] = []
    headings: list[str] = []
    lines: list[str] = []

    def flush() -> None:
        content = "\n".join(lines).strip()
        if content:
            sections.append(Section(tuple(headings), content))
        lines.clear()

    i = 0
    while i < len(raw):
        line = raw[i]
        following = raw[i + 1] if i + 1 < len(raw) else ""
        if line.strip() and _RST_UNDERLINE.match(following) and len(following.strip()) >= len(line.strip()):
            flush()
            marker = following.strip()[0]
            if marker not in levels:
                levels.append(marker)
            depth = levels.index(marker)
            if depth == 0 and not title:
                title = line.strip()
            else:
                headings = [*headings[: max(depth - 1, 0)], line.strip()]
            i += 2
            continue
        if _RST_UNDERLINE.match(line) or line.strip().startswith(".. "):
            i += 1
            continue
        lines.append(re.sub(r"``|\*\*|`_?", "", line))
        i += 1
    flush()
    return title, "", sections


def _parse_plain(text: str) -> tuple[str, str, list[Section]]:
    body = text.strip()
    first, _, rest = body.partition("\n")
    # A short first line followed by a blank line reads as the document's title.
    if rest.startswith("\n") and len(first) <= 100 and not first.endswith("."):
        return first.strip(), "", [Section((), rest.strip())]
    return "", "", [Section((), body)]


def _parse_html(text: str) -> tuple[str, str, list[Section]]:
    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(["script", "style", "nav", "footer", "header", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    canonical = soup.find("link", rel="canonical")
    url = str(canonical.get("href", "")) if isinstance(canonical, Tag) else ""
    body = soup.body or soup
    sections: list[Section] = []
    headings: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        content = "\n\n".join(parts).strip()
        if content:
            sections.append(Section(tuple(headings), content))
        parts.clear()

    for element in body.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "td", "dd", "dt"]):
        if not isinstance(element, Tag):
            continue
        if element.find_parent(["li", "td", "dd"]) is not None and element.name in ("p", "li"):
            continue  # already taken with its container
        content = element.get_text(" ", strip=True)
        if not content:
            continue
        if element.name[0] == "h":
            flush()
            level = int(element.name[1])
            if level == 1 and not title:
                title = content
                continue
            if level == 1:
                headings = []
                continue
            headings = [*headings[: max(level - 2, 0)], content]
        else:
            parts.append(content)
    flush()
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
                sections=(Section((), record["text"].strip()),),
                passage_id=passage_id,
            )
        )
    if not documents:
        raise DocumentLoadError(path=path, reason="no records")
    return documents
