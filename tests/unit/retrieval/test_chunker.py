import itertools

from retrieval.ingest.chunker import ChunkingSettings, chunk_document
from retrieval.ingest.loaders import Document, Section
from retrieval.text import split_sentences


def _sentences(prefix: str, count: int) -> str:
    return " ".join(f"{prefix.title()} sentence number {i} has exactly eight words." for i in range(count))


def _doc(*sections: Section, source: str = "doc.md") -> Document:
    return Document(doc_id=source, source=source, title="Doc", url="", sections=sections)


def test_chunks_never_cross_a_heading_and_carry_it_in_the_title() -> None:
    doc = _doc(Section(("Alpha",), _sentences("alpha", 40)), Section(("Beta",), _sentences("beta", 40)))
    passages = chunk_document(doc, collection="c")
    assert {p.title for p in passages} == {"Doc › Alpha", "Doc › Beta"}
    for passage in passages:
        assert ("Alpha" in passage.text) != ("Beta" in passage.text)


def test_long_sections_split_within_size_limits_with_overlap() -> None:
    settings = ChunkingSettings(target_words=100, max_words=140, overlap_words=20, min_words=10)
    doc = _doc(Section(("Long",), "\n\n".join(_sentences(f"p{n}", 3) for n in range(30))))
    passages = chunk_document(doc, collection="c", settings=settings)
    assert len(passages) > 3
    assert all(len(p.text.split()) <= settings.max_words for p in passages)
    for first, second in itertools.pairwise(passages):
        last_sentence = first.text.split("\n\n")[-1].split(". ")[-1]
        assert last_sentence in second.text  # the overlap


def test_ids_are_stable_and_change_with_content() -> None:
    doc = _doc(Section((), _sentences("same", 5)))
    assert [p.id for p in chunk_document(doc, collection="c")] == [
        p.id for p in chunk_document(doc, collection="c")
    ]
    changed = _doc(Section((), _sentences("other", 5)))
    assert chunk_document(doc, collection="c")[0].id != chunk_document(changed, collection="c")[0].id
    moved = _doc(Section((), _sentences("same", 5)), source="elsewhere.md")
    assert chunk_document(doc, collection="c")[0].id != chunk_document(moved, collection="c")[0].id


def test_small_sections_are_merged_with_their_neighbour() -> None:
    doc = _doc(Section(("A",), "Short one."), Section(("B",), "Short two."))
    [passage] = chunk_document(doc, collection="c")
    assert passage.title == "Doc › A / B"
    # Each heading stays in the text for search, as its own paragraph: never glued to a sentence.
    assert passage.text == "A\n\nShort one.\n\nB\n\nShort two."
    assert split_sentences(passage.text) == ["A", "Short one.", "B", "Short two."]


def test_fixed_ids_make_one_passage() -> None:
    doc = Document(
        doc_id="x", source="a.jsonl", title="T", url="u", sections=(Section((), "Text."),), passage_id="x"
    )
    [passage] = chunk_document(doc, collection="c")
    assert (passage.id, passage.title, passage.url, passage.text) == ("x", "T", "u", "Text.")


def test_a_long_code_block_is_cut_at_lines_into_code_blocks_and_a_long_list_at_items() -> None:
    from retrieval.ingest.chunker import ChunkingSettings, chunk_document
    from retrieval.ingest.loaders import Document, Section
    from retrieval.text import code_blocks, is_code_block, split_sentences

    code = "```py\n" + "\n".join(f"step_{n} = run({n}, retries=3)" for n in range(60)) + "\n```"
    items = "\n".join(f"- Rule {n}: every deploy needs a reviewer and a green build." for n in range(40))
    document = Document(
        doc_id="d", source="d.md", title="Deploys", url="", sections=(Section((), f"{code}\n\n{items}"),)
    )
    settings = ChunkingSettings(target_words=100, max_words=120, overlap_words=0)
    passages = chunk_document(document, collection="eng", settings=settings)
    pieces = [piece for p in passages for piece in code_blocks(p.text)]
    assert len(pieces) > 1
    assert "\n".join(pieces).splitlines() == code.splitlines()[1:-1]
    for passage in passages:
        for paragraph in passage.text.split("\n\n"):
            assert is_code_block(paragraph) or "```" not in paragraph
    rules = [s for p in passages for s in split_sentences(p.text)]
    assert rules == [f"Rule {n}: every deploy needs a reviewer and a green build." for n in range(40)]
