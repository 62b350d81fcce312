"""Heading-aware chunking: passages of about 200–400 words that never cross a heading."""

import re
from dataclasses import dataclass

from retrieval.ingest.loaders import Document, Section
from retrieval.passages import Passage, make_passage_id
from retrieval.text import CODE_FENCE, is_code_block, split_sentences

# A line that starts a list item or a table row, as the loaders write them.
_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s")


@dataclass(frozen=True)
class ChunkingSettings:
    target_words: int = 300
    max_words: int = 400
    overlap_words: int = 40
    min_words: int = 60


def chunk_document(
    document: Document, *, collection: str, settings: ChunkingSettings | None = None
) -> list[Passage]:
    """Split a document into passages with stable ids; a fixed id (JSONL) makes one passage."""
    settings = settings or ChunkingSettings()
    if document.passage_id is not None:
        text = "\n\n".join(s.text for s in document.sections)
        return [_passage(document, collection, document.passage_id, document.title, text)]
    passages: list[Passage] = []
    for section in _merge_small_sections(document.sections, settings):
        title = " › ".join((document.title, *section.headings)) if section.headings else document.title
        for text in _split_section(section.text, settings):
            chunk_no = len(passages)
            passage_id = make_passage_id(document.source, chunk_no, text)
            passages.append(_passage(document, collection, passage_id, title, text))
    return passages


def _passage(document: Document, collection: str, passage_id: str, title: str, text: str) -> Passage:
    return Passage(
        id=passage_id,
        collection=collection,
        doc_id=document.doc_id,
        source=document.source,
        title=title,
        url=document.url,
        text=text,
        readers=document.readers,
    )


def _merge_small_sections(sections: tuple[Section, ...], settings: ChunkingSettings) -> list[Section]:
    """Fold a tiny section into the next one under the same parent, so passages carry context."""
    merged: list[Section] = []
    pending: Section | None = None
    for section in sections:
        if pending is not None:
            same_parent = pending.headings[:-1] == section.headings[:-1]
            if same_parent and _words(pending.text) + _words(section.text) <= settings.target_words:
                heading = " / ".join(h for h in (pending.headings[-1:] + section.headings[-1:]) if h)
                section = Section(
                    (*section.headings[:-1], heading) if heading else section.headings,
                    f"{_labelled(pending)}\n\n{_labelled(section)}",
                )
            else:
                merged.append(pending)
        pending = section if _words(section.text) < settings.min_words else None
        if pending is None:
            merged.append(section)
    if pending is not None:
        merged.append(pending)
    return merged


def _labelled(section: Section) -> str:
    """The section's text under its heading, as a paragraph of its own: retrieval still sees the
    heading's words, and sentence splitting never glues the heading onto the first sentence."""
    if not section.headings or not section.headings[-1] or section.text.startswith(section.headings[-1]):
        return section.text
    return f"{section.headings[-1]}\n\n{section.text}"


def _words(text: str) -> int:
    return len(text.split())


def _split_section(text: str, settings: ChunkingSettings) -> list[str]:
    """Pack paragraphs (or, for long ones, sentences) into chunks with a small overlap. A paragraph
    keeps its lines (a list's items, a table's rows, each one a line, as the loaders write them);
    a code block (``retrieval.text.code_block``) keeps its own, and a long one is cut at lines into
    blocks of its own."""
    units: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        if is_code_block(paragraph):
            units.extend(_code_pieces(paragraph, settings.max_words))
        elif _words(paragraph) <= settings.max_words:
            units.append(_tidy(paragraph))
        else:
            units.extend(_long_paragraph(paragraph, settings.max_words))
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    carried = 0  # words at the start of ``current`` repeated from the previous chunk
    for unit in units:
        size = _words(unit)
        if current and (count + size > settings.max_words or count >= settings.target_words):
            chunks.append("\n\n".join(current))
            current, count = _overlap(current, settings.overlap_words)
            carried = count
        if size > settings.max_words and not is_code_block(
            unit
        ):  # one enormous sentence: hard-split by words
            words = unit.split()
            for start in range(0, len(words), settings.max_words):
                chunks.append(" ".join(words[start : start + settings.max_words]))
            current, count, carried = [], 0, 0
            continue
        current.append(unit)
        count += size
    if current and count > carried:
        chunks.append("\n\n".join(current))
    return chunks


def _overlap(units: list[str], overlap_words: int) -> tuple[list[str], int]:
    """The last sentences of the previous chunk, up to ``overlap_words`` words."""
    if overlap_words <= 0 or not units:
        return [], 0
    sentences = split_sentences(units[-1])
    kept: list[str] = []
    count = 0
    for sentence in reversed(sentences):
        size = _words(sentence)
        if count + size > overlap_words:
            break
        kept.insert(0, sentence)
        count += size
    return ([" ".join(kept)], count) if kept else ([], 0)


def _tidy(paragraph: str) -> str:
    """Each line of a paragraph with its spaces tidied, and no empty line."""
    return "\n".join(" ".join(line.split()) for line in paragraph.splitlines() if line.strip())


def _long_paragraph(paragraph: str, max_words: int) -> list[str]:
    """A paragraph over ``max_words`` as units: a list (or a table) as runs of whole items of at
    most ``max_words`` words, any other paragraph as its sentences."""
    items: list[str] = []
    for line in paragraph.splitlines():
        if _ITEM.match(line) or not items:
            items.append(line)
        elif line.strip():
            items[-1] += "\n" + line
    if len(items) < 2 or not _ITEM.match(items[0]):
        return split_sentences(paragraph)
    units: list[str] = []
    for run in _runs(items, max_words):
        text = _tidy("\n".join(run))
        units.extend([text] if _words(text) <= max_words else split_sentences(text))
    return units


def _runs(lines: list[str], max_words: int) -> list[list[str]]:
    """Consecutive ``lines`` in runs of at most ``max_words`` words (a longer line is a run by
    itself)."""
    runs: list[list[str]] = [[]]
    count = 0
    for line in lines:
        size = _words(line)
        if runs[-1] and count + size > max_words:
            runs.append([])
            count = 0
        runs[-1].append(line)
        count += size
    return [run for run in runs if run]


def _code_pieces(block: str, max_words: int) -> list[str]:
    """A code block as blocks of whole lines of at most ``max_words`` words each (a longer line
    is a block by itself)."""
    lines = block.strip().split("\n")
    fence, body = lines[0], lines[1:-1]
    return ["\n".join([fence, *run, CODE_FENCE]) for run in _runs(body, max_words)]
