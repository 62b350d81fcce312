"""reStructuredText read as its rendered page reads, line by line (no docutils: Sphinx's own
directives and roles would be unknown to it anyway).

- Section titles (underlined, or over- and underlined) are headings, by the order their
  adornments first appear.
- Admonitions (``.. note::``, ``.. warning::``…) are paragraphs of their own, opening with their
  kind ("Note: …"); code (``.. code-block::``, and the indented block after a paragraph ending in
  ``::``) is a code block (``retrieval.text.code_block``); other directives (``image``,
  ``toctree``, ``include``, ``raw``…), comments and link targets are no text.
- Roles read as their text (``:ref:`the guide <guide>``` as "the guide", ``:func:`~os.path.join```
  as "join"), links as their text, literals and emphasis without their marks, and substitution
  references as their name.
- Lists are an item a line; a grid table is read row by row (``retrieval.ingest.tables``).
"""

import re

from retrieval.ingest.tables import table_text
from retrieval.text import code_block, is_code_block

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_EXPLICIT = re.compile(r"^\.\.(?:\s|$)")  # a comment, a target (".. _name:"), a footnote
_ADMONITIONS = frozenset(
    "note warning tip important attention caution danger hint error admonition seealso".split()
    + "versionadded versionchanged deprecated todo".split()
)
_CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode", "parsed-literal"})
# Directives that show no text of their own (pictures, tables of contents, inclusions, raw output,
# settings); any other one shows its argument and body.
_NO_TEXT = frozenset(
    "image figure toctree include literalinclude raw meta index contents sectnum highlight".split()
    + "default-role role class title target-notes header footer only ifconfig autosummary".split()
    # diagrams drawn from their source (Graphviz, Mermaid, PlantUML), and Sphinx's settings for
    # what follows (the default domain, the current module or program)
    + "graphviz graph digraph mermaid plantuml uml default-domain currentmodule program".split()
    + "py:currentmodule".split()
)
# Sphinx's object descriptions outside a domain ("py:function" and the like are in one): their
# argument is a signature, read literally ("--auditfile=<file|-|-->" holds no substitution).
_OBJECTS = frozenset("option cmdoption envvar confval describe object function class".split())
# A directive's options, the field lines that open its body (":alt: A diagram").
_OPTIONS = re.compile(r"\A(?:[ \t]*:[\w-]+:.*\n?)+")
_ITEM = re.compile(r"^(?:[-*+•]|#\.|\d{1,3}[.)]|\(\d{1,3}\))\s+")
_ROLE_WITH_TARGET = re.compile(r":[\w:+-]+:`([^`<]*?)\s*<[^`>]*>`")
_ROLE = re.compile(r":[\w:+-]+:`[~!]?([^`]*)`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?")
_NAMED_REFERENCE = re.compile(r"`([^`]+)`__?")
_FOOTNOTE_REFERENCE = re.compile(r"\s*\[(?:#\w*|\*|\d+)\]_")
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"(?<![\w*])\*\*?(\S(?:.*?\S)?)\*\*?(?![\w*])")
_SUBSTITUTION = re.compile(r"\|([^|\s][^|]*?)\|_{0,2}")
_SIMPLE_REFERENCE = re.compile(r"(?<![\w`])([A-Za-z0-9]+)_{1,2}(?=[\s.,;:!?)]|$)")


def parse_rst(text: str) -> tuple[str, list[tuple[int, str]]]:
    """The document's title and its headings (level 1–6) and paragraphs (level 0)."""
    lines = text.expandtabs().splitlines()
    blocks: list[tuple[int, str]] = []
    adornments: list[str] = []
    title = ""
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append((0, _paragraph(paragraph)))
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            line.strip()
            and not line[0].isspace()
            and _UNDERLINE.match(following)
            and len(following.strip()) >= len(line.strip())
        ):
            flush()
            adornment = following.strip()[0] + ("o" if i > 0 and _UNDERLINE.match(lines[i - 1]) else "")
            if adornment not in adornments:
                adornments.append(adornment)
            level = min(adornments.index(adornment) + 1, 6)
            heading = inline_rst(line.strip())
            if level == 1 and not title:
                title = heading
            else:
                blocks.append((level, heading))
            i += 2
            continue
        if _UNDERLINE.match(line) or not line.strip():
            flush()
            i += 1
            continue
        directive = _DIRECTIVE.match(line)
        if directive or _EXPLICIT.match(line):
            flush()
            body, i = _indented(lines, i + 1)
            if directive:
                blocks += _directive(directive.group(1).lower(), directive.group(2).strip(), _dedent(body))
            continue
        if line.lstrip().startswith("+-") and line.rstrip().endswith("+"):
            flush()
            table, i = _grid_table(lines, i)
            if table:
                blocks.append((0, table))
            continue
        paragraph.append(line)
        i += 1
        if line.rstrip().endswith("::") and (i >= len(lines) or not lines[i].strip()):
            body, i = _indented(lines, i)
            ending = line.rstrip()
            paragraph[-1] = ending[:-1] if ending[-3:-2].strip() else ending[:-2]  # "Run::" reads "Run:"
            if not paragraph[-1].strip():
                paragraph.pop()
            flush()
            code = code_block(_dedent(body))
            if code:
                blocks.append((0, code))
    flush()
    return title, [(level, text) for level, text in blocks if text.strip()]


def _directive(name: str, argument: str, body: str) -> list[tuple[int, str]]:
    """What a directive shows: code, an admonition's text, or an unknown directive's argument and
    body (``.. py:function:: name(args)`` and its description, read "name(args): Returns …");
    nothing for the others."""
    body = _OPTIONS.sub("", body)
    if name in _CODE_DIRECTIVES:
        return [(0, code_block(body, argument))]
    if name in _NO_TEXT:
        return []
    _, inner = parse_rst(body)
    inner = [(0, text) for _, text in inner]
    if name in _ADMONITIONS:
        kind = name.capitalize() + ":"
        opening = " ".join((kind, inline_rst(argument))).strip()
        if inner and not argument:
            return [(0, f"{opening} {inner[0][1]}"), *inner[1:]]
        return [(0, opening), *inner] if argument else inner
    if not argument:
        return inner
    # An object's description (".. option:: --gui-address", ".. py:function:: restore(target)")
    # opens with what it describes, as a definition list's term does: its first sentence says it.
    named = argument if name in _OBJECTS or ":" in name else inline_rst(argument)
    if inner and not is_code_block(inner[0][1]) and not _EXPLICIT.match(body.lstrip()):
        return [(0, f"{named}: {inner[0][1]}"), *inner[1:]]
    return [(0, named), *inner]


def _indented(lines: list[str], start: int) -> tuple[str, int]:
    """The indented block from ``start`` (blank lines inside it included), and the index after it."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end]), end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _dedent(block: str) -> str:
    lines = block.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def _paragraph(lines: list[str]) -> str:
    """A paragraph's lines as one line of text, or a list as an item a line."""
    items: list[str] = []
    for number, line in enumerate(lines):
        stripped = line.strip()
        marker = _ITEM.match(stripped)
        if marker or not items:
            if marker:
                stripped = "- " + stripped[marker.end() :]
            items.append(stripped)
        elif number == 1 and _indent(line) > _indent(lines[0]) and not _ITEM.match(lines[0].strip()):
            items[-1] += ": " + stripped  # a definition list's term and its definition
        else:
            items[-1] += " " + stripped
    return "\n".join(inline_rst(item) for item in items)


def inline_rst(text: str) -> str:
    """A line's inline markup read as its text."""
    text = _LITERAL.sub(r"\1", text)
    text = _ROLE_WITH_TARGET.sub(r"\1", text)
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1] if m.group(0).count("~") else m.group(1), text)
    text = _LINK.sub(r"\1", text)
    text = _NAMED_REFERENCE.sub(r"\1", text)
    text = _FOOTNOTE_REFERENCE.sub("", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    text = _SIMPLE_REFERENCE.sub(r"\1", text)
    return " ".join(text.split())


def _grid_table(lines: list[str], start: int) -> tuple[str, int]:
    """A grid table from ``start`` read row by row, and the index after it."""
    end = start
    while end < len(lines) and lines[end].strip()[:1] in ("+", "|"):
        end += 1
    header: list[str] = []
    rows: list[list[str]] = []
    current: list[list[str]] = []
    for line in (raw.strip() for raw in lines[start:end]):
        if line.startswith("+"):
            if current:
                rows.append(
                    [" ".join(part for part in column if part) for column in zip(*current, strict=False)]
                )
                current = []
            if "=" in line and not header and rows:
                header, rows = rows[-1], rows[:-1]
            continue
        current.append([cell.strip() for cell in line.strip("|").split("|")])
    return table_text([inline_rst(c) for c in header], [[inline_rst(c) for c in row] for row in rows]), end
