"""Heading-aware chunking: passages of about 200–400 words that never cross a heading."""

from dataclasses import dataclass

from retrieval.ingest.loaders import Document, Section
from retrieval.passages import Passage, make_passage_id
from retrieval.text import split_sentences


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
    """Pack paragraphs (or, for long ones, sentences) into chunks with a small overlap."""
    units: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        if _words(paragraph) <= settings.max_words:
            units.append(" ".join(paragraph.split()))
        else:
            units.extend(split_sentences(paragraph))
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
        if size > settings.max_words:  # one enormous sentence: hard-split by words
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
