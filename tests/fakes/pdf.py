"""A minimal PDF writer (Helvetica text, Latin-1) for test fixtures and the sample collections."""

import textwrap
from pathlib import Path

LINES_PER_PAGE = 48


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(title: str, paragraphs: list[str]) -> bytes:
    lines: list[str] = [title, ""]
    for paragraph in paragraphs:
        lines.extend(textwrap.wrap(paragraph, 88) or [""])
        lines.append("")
    pages = [lines[i : i + LINES_PER_PAGE] for i in range(0, len(lines), LINES_PER_PAGE)]
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for page_lines in pages:
        content = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
        for line in page_lines:
            content.append(f"({_escape(line)}) Tj T*")
        content.append("ET")
        stream = "\n".join(content).encode("latin-1")
        content_id = len(objects) + 2
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {content_id} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info_id = len(objects) + 1
    objects.append(f"<< /Title ({_escape(title)}) /Producer (confer-tests) >>".encode("latin-1"))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        info_id,
        xref,
    )
    return bytes(out)


def write_pdf(path: Path, title: str, paragraphs: list[str]) -> Path:
    path.write_bytes(pdf_bytes(title, paragraphs))
    return path
