"""Office files made here with the formats' own writers become passages whose text is asserted."""

from pathlib import Path

import docx
import openpyxl
import pytest
from pptx import Presentation
from pptx.util import Inches

from retrieval.errors import DocumentLoadError
from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.passages import Passage


def passages(path: Path) -> list[Passage]:
    return [p for d in load_file(path, source=path.name) for p in chunk_document(d, collection="c")]


def test_a_word_document_reads_by_its_headings_with_its_tables(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Travel policy", style="Title")
    document.add_heading("Trains", level=1)
    document.add_paragraph("Trains are booked in second class for trips under four hours.")
    document.add_heading("Hotels", level=1)
    document.add_paragraph("Hotel stays are reimbursed up to a nightly limit per city:")
    table = document.add_table(rows=3, cols=2)
    cells = [("City", "Limit"), ("Paris", "180 EUR"), ("Lyon", "120 EUR")]
    for row, (city, limit) in zip(table.rows, cells, strict=True):
        row.cells[0].text, row.cells[1].text = city, limit
    document.save(str(tmp_path / "travel.docx"))
    [loaded] = load_file(tmp_path / "travel.docx", source="travel.docx")
    assert loaded.title == "Travel policy"
    assert [(s.headings, s.text) for s in loaded.sections] == [
        (("Trains",), "Trains are booked in second class for trips under four hours."),
        (
            ("Hotels",),
            "Hotel stays are reimbursed up to a nightly limit per city:\n\nCity | Limit\n\n"
            "City: Paris; Limit: 180 EUR\n\nCity: Lyon; Limit: 120 EUR",
        ),
    ]
    [passage] = passages(tmp_path / "travel.docx")
    assert passage.title == "Travel policy › Trains / Hotels"
    assert "second class" in passage.text and "City: Paris; Limit: 180 EUR" in passage.text


def test_a_presentation_reads_slide_by_slide_with_notes(tmp_path: Path) -> None:
    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[0])
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Beacon, third quarter"
    second = presentation.slides.add_slide(presentation.slide_layouts[1])
    second.shapes.title.text = "Uptime"
    second.placeholders[1].text_frame.text = "The API was up 99.95 percent of the quarter."
    second.notes_slide.notes_text_frame.text = "Two incidents, both under ten minutes."
    box = second.shapes.add_textbox(Inches(1), Inches(5), Inches(4), Inches(1))
    box.text_frame.text = "Target: 99.9 percent"
    presentation.save(str(tmp_path / "review.pptx"))
    [document] = load_file(tmp_path / "review.pptx", source="review.pptx")
    assert document.title == "Quarterly review"
    assert [(s.headings, s.text) for s in document.sections] == [
        (("Quarterly review",), "Beacon, third quarter"),
        (
            ("Uptime",),
            "The API was up 99.95 percent of the quarter.\n\nTarget: 99.9 percent\n\n"
            "Two incidents, both under ten minutes.",
        ),
    ]
    assert "99.95 percent" in " ".join(p.text for p in passages(tmp_path / "review.pptx"))


def test_a_workbook_reads_sheet_by_sheet_each_value_beside_its_header(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    leave = workbook.active
    assert leave is not None
    leave.title = "Leave"
    leave.append(["Country", "Paid days off", "Parental leave (weeks)"])
    leave.append(["France", 27, 20])
    leave.append(["Spain", 25, None])
    rates = workbook.create_sheet("Rates")
    rates.append((1, 2.5))
    workbook.properties.title = "Benefits by country"
    workbook.save(tmp_path / "benefits.xlsx")
    [document] = load_file(tmp_path / "benefits.xlsx", source="benefits.xlsx")
    assert document.title == "Benefits by country"
    assert [(s.headings, s.text) for s in document.sections] == [
        (
            ("Leave",),
            "Country | Paid days off | Parental leave (weeks)\n"
            "Country: France; Paid days off: 27; Parental leave (weeks): 20\n"
            "Country: Spain; Paid days off: 25",
        ),
        (("Rates",), "1 | 2.5"),
    ]
    texts = [p.text for p in passages(tmp_path / "benefits.xlsx")]
    assert any("Country: France; Paid days off: 27" in t for t in texts)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("a.docx", "Word document"), ("a.pptx", "PowerPoint presentation"), ("a.xlsx", "Excel workbook")],
)
def test_a_broken_office_file_is_named_with_its_kind(tmp_path: Path, name: str, kind: str) -> None:
    (tmp_path / name).write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DocumentLoadError) as caught:
        load_file(tmp_path / name, source=name)
    assert caught.value.reason == f"not a readable {kind}"
