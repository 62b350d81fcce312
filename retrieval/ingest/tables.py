"""A table as a passage carries it: one row a line, each cell read with its column's header."""

from collections.abc import Sequence

# Each row is a list item, so the sentence splitter reads every row as a sentence of its own.
ROW_MARKER = "- "


def table_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The rows of a table, one a line, each cell as "header: value" ("Plan: Team; Requests per
    minute: 600"); a cell without a header is its value alone, and an empty cell is left out."""
    header = [" ".join(cell.split()) for cell in header]
    lines: list[str] = []
    for row in rows:
        cells: list[str] = []
        for number, cell in enumerate(row):
            value = " ".join(cell.split())
            if not value:
                continue
            name = header[number] if number < len(header) else ""
            cells.append(f"{name}: {value}" if name and name != value else value)
        if cells:
            lines.append(ROW_MARKER + "; ".join(cells))
    if not lines and any(header):  # a table of its header alone still says what it lists
        lines.append(ROW_MARKER + "; ".join(cell for cell in header if cell))
    return "\n".join(lines)
