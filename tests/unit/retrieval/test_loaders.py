import json
from pathlib import Path

import pytest

from retrieval.errors import DocumentLoadError
from retrieval.ingest.loaders import load_file
from retrieval.text import split_sentences
from tests.fakes.pdf import write_pdf


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_markdown_title_sections_and_front_matter_url(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "guide.md",
        "---\nurl: https://docs.example/guide\n---\n# The guide\nIntro text.\n\n## Setup\nInstall **it**.\n"
        "```\n# not a heading\n```\n### Details\nSee [the docs](http://x).\n",
    )
    [doc] = load_file(path, source="guide.md")
    assert doc.title == "The guide"
    assert doc.url == "https://docs.example/guide"
    assert [s.headings for s in doc.sections] == [(), ("Setup",), ("Setup", "Details")]
    assert "Install it." in doc.sections[1].text
    assert "See the docs." in doc.sections[2].text


def test_html_uses_title_canonical_url_and_headings_without_navigation(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "p.html",
        "<html><head><title>Travel</title><link rel='canonical' href='https://h.example/t'></head>"
        "<body><nav>Menu</nav><h1>Travel</h1><p>Approve first.</p>"
        "<h2>Hotels</h2><ul><li>Up to 180 euros.</li></ul>"
        "<script>alert(1)</script></body></html>",
    )
    [doc] = load_file(path, source="p.html")
    assert (doc.title, doc.url) == ("Travel", "https://h.example/t")
    assert [s.headings for s in doc.sections] == [(), ("Hotels",)]
    text = " ".join(s.text for s in doc.sections)
    assert "Menu" not in text and "alert" not in text and "180 euros" in text


def test_restructuredtext_headings(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "m.rst", "Migrations\n==========\n\nIntro.\n\nWriting\n-------\n\nUse ``expand``.\n"
    )
    [doc] = load_file(path, source="m.rst")
    assert doc.title == "Migrations"
    assert [s.headings for s in doc.sections] == [(), ("Writing",)]
    assert doc.sections[1].text == "Use expand."


def test_plain_text_first_line_is_title(tmp_path: Path) -> None:
    [doc] = load_file(_write(tmp_path, "r.txt", "Runbook\n\nDo this. Then that.\n"), source="r.txt")
    assert doc.title == "Runbook" and doc.sections[0].text == "Do this. Then that."


def test_pdf_text_and_title(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "leave.pdf", "Leave policy", ["Parents get 20 weeks of paid leave."])
    [doc] = load_file(path, source="leave.pdf")
    assert doc.title == "Leave policy"
    assert doc.sections[0].text == "Parents get 20 weeks of paid leave."


@pytest.mark.parametrize("content", [b"%PDF-1.4\n garbage", b"not a pdf at all", b""])
def test_corrupt_pdf_is_a_load_error_with_a_short_reason(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(content)
    with pytest.raises(DocumentLoadError) as caught:
        load_file(path, source="broken.pdf")
    assert caught.value.path == path
    assert "PDF" in caught.value.reason


def test_jsonl_keeps_ids_and_reports_bad_lines(tmp_path: Path) -> None:
    good = _write(
        tmp_path,
        "a.jsonl",
        '{"id": "x1", "title": "X", "text": "Hello.", "url": "https://x"}\n\n'
        '{"id": "x2", "text": "World."}\n',
    )
    docs = load_file(good, source="a.jsonl")
    assert [(d.passage_id, d.title, d.url) for d in docs] == [("x1", "X", "https://x"), ("x2", "x2", "")]
    bad = _write(tmp_path, "b.jsonl", '{"id": "x1", "text": "ok"}\n{oops\n')
    with pytest.raises(DocumentLoadError, match="line 2"):
        load_file(bad, source="b.jsonl")
    duplicate = _write(tmp_path, "c.jsonl", '{"id": "x", "text": "a"}\n{"id": "x", "text": "b"}\n')
    with pytest.raises(DocumentLoadError, match="duplicate"):
        load_file(duplicate, source="c.jsonl")


def test_jsonl_text_reads_links_as_their_text_and_html_breaks_as_breaks(tmp_path: Path) -> None:
    # As a help centre's export writes them (orgdocs' IBM Cloud passages): no answer sentence may
    # quote a link's address or "<br>".
    record = {
        "id": "p1",
        "text": '[\u201cDevelop a Code Engine app" toolchain](http://cloud.ibm.com/devops/setup/deploy?'
        "repository=https%3A%2F%2Fgithub.com)<br><br>Available in Dallas and Sao Paulo.<!-- draft -->\n\n"
        "Manage your card on the [Payments](https://cloud.ibm.com/billing/payments) page, "
        "as [the guide][guide] says. ![A diagram](img/flow.png) Plain [brackets] and * stay.",
    }
    path = _write(tmp_path, "help.jsonl", json.dumps(record) + "\n")
    [doc] = load_file(path, source="help.jsonl")
    assert doc.sections[0].text == (
        '\u201cDevelop a Code Engine app" toolchain\n\nAvailable in Dallas and Sao Paulo.\n\n'
        "Manage your card on the Payments page, as the guide says. A diagram Plain [brackets] and * stay."
    )


def test_mojibake_in_titles_headings_and_text_is_repaired(tmp_path: Path) -> None:
    broken = "\u00e2\u0080\u0099"  # a right single quote's UTF-8 bytes read as Latin-1
    path = _write(
        tmp_path,
        "court.md",
        f"# The clerk{broken}s office\n## Filing{broken}s fees\nAsk the clerk{broken}s office.\n",
    )
    [doc] = load_file(path, source="court.md")
    assert (doc.title, doc.sections[0].headings) == ("The clerk’s office", ("Filing’s fees",))
    assert doc.sections[0].text == "Ask the clerk’s office."
    lines = _write(
        tmp_path,
        "nasa.jsonl",
        '{"id": "n1", "title": "NASA‚Äôs missions", "text": "NASA‚Äôs Europa Clipper."}\n',
    )
    [passage] = load_file(lines, source="nasa.jsonl")
    assert (passage.title, passage.sections[0].text) == ("NASA’s missions", "NASA’s Europa Clipper.")


def test_a_text_opening_with_its_title_keeps_the_title_line_out_of_its_first_sentence(tmp_path: Path) -> None:
    title = "Hayward VA Clinic | VA Minneapolis Health Care | Veterans Affairs"
    page = (
        f"{title}\n{title}\nWhole health puts you at the center of care. Call us to book.\nParking is free."
    )
    path = _write(tmp_path, "clinics.jsonl", json.dumps({"id": "c1", "title": title, "text": page}) + "\n")
    [doc] = load_file(path, source="clinics.jsonl")
    assert split_sentences(doc.sections[0].text) == [
        title,
        title,
        "Whole health puts you at the center of care.",
        "Call us to book.",
        "Parking is free.",
    ]
    other = _write(
        tmp_path,
        "other.jsonl",
        json.dumps({"id": "o1", "title": "Parking", "text": "Parking\nis free."}) + "\n",
    )
    assert split_sentences(load_file(other, source="other.jsonl")[0].sections[0].text) == ["Parking is free."]


def test_unsupported_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(DocumentLoadError, match="unsupported"):
        load_file(_write(tmp_path, "x.docx", "x"), source="x.docx")
    binary = tmp_path / "y.md"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(DocumentLoadError, match="UTF-8"):
        load_file(binary, source="y.md")
    with pytest.raises(DocumentLoadError, match="no text"):
        load_file(_write(tmp_path, "z.md", "# Only a title\n"), source="z.md")
