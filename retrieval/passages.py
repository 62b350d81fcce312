"""Passages: the unit that is indexed, retrieved and cited."""

import hashlib

from pydantic import BaseModel, ConfigDict

from retrieval.audience import readers_key

# The version of the text the loaders and the chunker make of a document. An index stores the
# version its passages were made with; ``confer index`` says when it finds an older one, and rebuilds
# (every changed passage is a new one). 2: Markdown comments, link syntax and front matter dropped,
# code kept in code blocks of its own, tables read row by row, list items and rows one a line, HTML
# furniture left out, reStructuredText directives and roles read as text. 3: a JSONL passage's
# links read as their text, its HTML comments dropped and its HTML line breaks read as breaks. 4: an
# inline link left unclosed ("[the guide](https://…" to the line's end) read as its text. 5: a
# reStructuredText object description read "--name: what it does", diagrams' source left out.
TEXT_FORMAT = 5


class Passage(BaseModel):
    """A chunk of one document in one collection; ``score`` is set by a search."""

    model_config = ConfigDict(frozen=True)

    id: str
    collection: str
    doc_id: str
    source: str
    title: str
    url: str = ""
    text: str
    score: float = 0.0
    highlights: tuple[str, ...] = ()
    # A hybrid search's two scores, before fusion (``retrieval.scoring``): the word score with the
    # corpus's statistics, and the cosine of the passage's and the question's embeddings. Unset by a
    # search by words alone, whose ``score`` is the engine's own.
    lexical: float | None = None
    semantic: float | None = None
    # Who may read it at its source (``retrieval.audience``), for a connector with ``permissions:
    # true``; ``None``: everyone who may search the collection. Written when a passage is indexed;
    # a search filters by it and leaves it unset on the passages it finds.
    readers: tuple[str, ...] | None = None

    def scored(self, score: float, highlights: tuple[str, ...] = ()) -> "Passage":
        return self.model_copy(update={"score": score, "highlights": highlights})


class CollectionStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    documents: int
    passages: int


class SyncStats(BaseModel):
    """What one ``sync_collection`` changed."""

    model_config = ConfigDict(frozen=True)

    added: int
    removed: int
    unchanged: int
    # The ``TEXT_FORMAT`` the collection's index had been made with, when it was an older one (an
    # index written before formats were stored counts as 1); ``None`` otherwise.
    earlier_format: int | None = None


def content_digest(
    doc_id: str, source: str, title: str, url: str, text: str, readers: str | None = None
) -> str:
    """What a sync compares to tell whether a stored passage is still the one wanted: an id may stay
    while the content changes (a JSONL line keeps the id its file gives, and a chunk's id does not
    cover its document's title or address), or while who may read it changes (``readers``: its
    ``readers_key``; a passage without readers has the digest it had before readers existed)."""
    parts = (
        (doc_id, source, title, url, text) if readers is None else (doc_id, source, title, url, text, readers)
    )
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:20]


def digest_of(passage: Passage) -> str:
    return content_digest(
        passage.doc_id,
        passage.source,
        passage.title,
        passage.url,
        passage.text,
        readers_key(passage.readers),
    )


def make_passage_id(source: str, chunk: int, text: str) -> str:
    """Stable across re-indexing: same file, same chunk number, same content, same id."""
    digest = hashlib.sha256(f"{source}\x00{chunk}\x00{text}".encode()).hexdigest()
    return f"p_{digest[:20]}"
