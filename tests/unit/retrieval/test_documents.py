"""Every document under samples/ and evals/ (whatever sets are there) read as the answer step reads
it: no sentence holds markup, and none is cut at an abbreviation."""

import re
from itertools import pairwise
from pathlib import Path

from retrieval.collections import load_collections, resolve_sources
from retrieval.errors import DocumentLoadError
from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import SUPPORTED_SUFFIXES, load_file
from retrieval.text import split_sentences
from tests.conftest import ROOT

MARKUP = ("<!--", "](", "][", "```", "~~~")
# Written here, not taken from the splitter: what a sentence must not be cut after ("No." only
# before a number: "No. It is not." is two sentences).
ABBREVIATION = re.compile(r"(?:^|[\s(])(?:e\.g|eg|i\.e|ie|etc|vs|approx|dr|[A-Z])\.$", re.IGNORECASE)
NUMBER_ABBREVIATION = re.compile(r"(?:^|[\s(])no\.$", re.IGNORECASE)


def _documents() -> list[Path]:
    """Every document file under samples/ and evals/ (question files aside), and every source the
    eval sets' collections files name."""
    found = {
        path
        for folder in ("samples", "evals")
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix.lower() in SUPPORTED_SUFFIXES and path.suffix.lower() != ".jsonl"
    }
    for collections_file in (ROOT / "evals").glob("*/collections.yaml"):
        config = load_collections(collections_file)
        for collection in config.collections:
            found.update(resolve_sources(collection, config))
    return sorted(found)


def test_no_sentence_of_any_document_holds_markup_or_is_cut_at_an_abbreviation() -> None:
    documents = _documents()
    assert len(documents) >= 33  # the samples at least
    marked: list[str] = []
    cut: list[str] = []
    read = 0
    for path in documents:
        try:
            loaded = load_file(path, source=path.relative_to(ROOT).as_posix())
        except DocumentLoadError:
            continue  # skipped by ``confer index`` too, with its reason
        for document in loaded:
            for passage in chunk_document(document, collection="all"):
                sentences = split_sentences(passage.text)
                read += len(sentences)
                marked += [f"{path}: {s}" for s in sentences if any(m in s for m in MARKUP)]
                # Cut: a sentence ends on an abbreviation and the next goes on in the same line.
                cut += [
                    f"{path}: {s} | {t}"
                    for s, t in pairwise(sentences)
                    if (ABBREVIATION.search(s) or (NUMBER_ABBREVIATION.search(s) and t[:1].isdigit()))
                    and f"{s} {t}" in passage.text
                ]
    assert read > 300
    assert not marked, "\n".join(marked[:20])
    assert not cut, "\n".join(cut[:20])
