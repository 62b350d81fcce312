"""Office documents as ``Document``s: Word (.docx), PowerPoint (.pptx) and Excel (.xlsx), read
with python-docx, python-pptx and openpyxl (the formats' maintained readers, pure Python).

- Word: headings (the ``Heading N`` styles) delimit sections as Markdown headings do; a ``Title``
  paragraph, or the file's title property, is the title; tables read row by row, in place.
- PowerPoint: a section per slide, headed by the slide's title; its text, tables and speaker notes.
- Excel: a section per sheet; a row under a header row reads ``Header: value; …``, so that a
  passage says what each number is.
"""

import logging
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from retrieval.errors import DocumentLoadError
from retrieval.ingest.loaders import Document, Section

logger = logging.getLogger(__name__)

_KINDS = {".docx": "Word document", ".pptx": "PowerPoint presentation", ".xlsx": "Excel workbook"}
_MAX_ROWS = 20_000  # a sheet's rows read at most: a larger table is data, not a document


def load_office(path: Path, source: str) -> Document:
    """One Office file as a document stored under ``source``; its title is its own (the title
    property, a Title paragraph, the first slide's title) or else made from the file's name.

    Raises ``DocumentLoadError`` when it is not a readable file of its kind, or holds no text.
    """
    suffix = path.suffix.lower()
    readers = {".docx": _word, ".pptx": _slides, ".xlsx": _workbook}
    refusals: tuple[type[Exception], ...] = (
        *_refusals(),
        zipfile.BadZipFile,
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
        OSError,
    )
    try:
        title, parts = readers[suffix](path)
    except refusals as exc:
        logger.debug("office parse failure", extra={"path": str(path), "error": type(exc).__name__})
        raise DocumentLoadError(path=path, reason=f"not a readable {_KINDS[suffix]}") from None
    sections = tuple(Section(headings, text) for headings, text in parts)
    if not sections:
        raise DocumentLoadError(path=path, reason="no text")
    title = title or re.sub(r"[-_]+", " ", path.stem).strip().capitalize() or path.name
    return Document(doc_id=source, source=source, title=title, url="", sections=sections)


def _refusals() -> tuple[type[Exception], ...]:
    """What the three readers raise for a file that is not of their kind."""
    from docx.opc.exceptions import PackageNotFoundError as NoWordPackage
    from openpyxl.utils.exceptions import InvalidFileException
    from pptx.exc import PackageNotFoundError as NoSlidesPackage

    return (NoWordPackage, NoSlidesPackage, InvalidFileException)


def _word(path: Path) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    import docx
    from docx.table import Table

    document = docx.Document(str(path))
    title = (document.core_properties.title or "").strip()
    sections: list[tuple[tuple[str, ...], str]] = []
    headings: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        text = "\n\n".join(parts).strip()
        if text:
            sections.append((tuple(headings), text))
        parts.clear()

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            parts.extend(_rows([[cell.text for cell in row.cells] for row in block.rows]))
            continue
        text = block.text.strip()
        if not text:
            continue
        style = (block.style.name if block.style is not None else "") or ""
        if style == "Title" and not title:
            title = text
        elif style.startswith("Heading") and style[7:].strip().isdigit():
            flush()
            level = int(style[7:])
            headings = [*headings[: max(level - 1, 0)], text]
        else:
            parts.append(text)
    flush()
    return title, sections


def _slides(path: Path) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    from pptx import Presentation

    presentation = Presentation(str(path))
    title = (presentation.core_properties.title or "").strip()
    sections: list[tuple[tuple[str, ...], str]] = []
    for number, slide in enumerate(presentation.slides, 1):
        heading_shape = slide.shapes.title
        heading = heading_shape.text_frame.text.strip() if heading_shape is not None else ""
        parts: list[str] = []
        for shape in slide.shapes:
            if heading_shape is not None and shape.shape_id == heading_shape.shape_id:
                continue
            if shape.has_text_frame:
                parts += [p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]
            if getattr(shape, "has_table", False):
                parts.extend(_rows([[c.text for c in row.cells] for row in shape.table.rows]))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                parts.append(notes)
        if number == 1 and not title and heading:
            title = heading
        if parts or heading:
            sections.append(((heading or f"Slide {number}",), "\n\n".join(parts) or heading))
    return title, sections


def _workbook(path: Path) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    from openpyxl import load_workbook

    workbook = load_workbook(path, read_only=True, data_only=True)
    try:
        title = (workbook.properties.title or "").strip()
        sections: list[tuple[tuple[str, ...], str]] = []
        for sheet in workbook.worksheets:
            rows = [
                ["" if value is None else str(value) for value in row]
                for _, row in zip(range(_MAX_ROWS), sheet.iter_rows(values_only=True), strict=False)
            ]
            lines = _rows(rows)
            if lines:
                sections.append(((str(sheet.title),), "\n".join(lines)))
    finally:
        workbook.close()
    return title, sections


def _rows(rows: Iterable[list[Any]]) -> list[str]:
    """A table's rows as lines: under a header row (every cell filled, no number), each row says
    ``Header: value; …``; otherwise its cells joined by `` | ``."""
    table = [[" ".join(str(c).split()) for c in row] for row in rows]
    table = [row for row in table if any(row)]
    if not table:
        return []
    header = table[0]
    labelled = len(table) > 1 and all(header) and not any(_number(c) for c in header)
    if not labelled:
        return [" | ".join(c for c in row if c) for row in table]
    lines = [" | ".join(header)]
    for row in table[1:]:
        pairs = [f"{name}: {value}" for name, value in zip(header, row, strict=False) if value]
        lines.append("; ".join(pairs))
    return lines


def _number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True
