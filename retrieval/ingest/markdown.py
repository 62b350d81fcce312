"""Markdown read as a person reads the rendered page, by a CommonMark parser (markdown-it-py).

- Front matter (YAML between ``---`` lines, or TOML between ``+++``) gives the title and address
  and is no text.
- HTML comments (``<!-- YAML added: v0.1.90 -->``) and other tags are dropped; HTML blocks (a table,
  a ``<details>``) are read as HTML (``retrieval.ingest.html``), with the Markdown inside them.
- Links read as their text, inline (``[text](url)``) or by reference (``[dns.lookup()][]``,
  ``[text][ref]``, whose ``[ref]: url`` definition lines are no text either), and also when a
  reference has no definition; images are dropped; emphasis and inline code keep their words
  without their marks.
- A paragraph is one line; a list is one paragraph with an item a line (``- item``, ``1. item``); a
  table is read row by row (``retrieval.ingest.tables``); a code block, fenced or indented, is a
  block of its own (``retrieval.text.code_block``), never part of a sentence.
"""

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from retrieval.ingest.html import fragment_blocks
from retrieval.ingest.tables import table_text
from retrieval.text import code_block, is_code_block

# A reference-style link whose reference is defined nowhere stays literal in the parsed text.
_UNRESOLVED_LINK = re.compile(r"!?\[([^\[\]]*)\]\[[^\[\]]*\]")
_INLINE_LINK = re.compile(r"!?\[([^\[\]]*)\]\([^()\s]*(?:\s+\"[^\"]*\")?\)")
# An inline link its writer left unclosed ("[the guide](https://…" and the line ends), literal too.
_UNCLOSED_LINK = re.compile(r"!?\[([^\[\]]*)\]\((?:https?://|/|\.)[^()\s]*(?=\s|$)")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# MDX (Docusaurus and others): ES module lines, admonition fences, and JSX elements with attributes
# ("<CtaBox headline="…" />", "<img src={useBaseUrl('…')} />"), which hold no text of the page's.
_MODULE_LINE = re.compile(
    r"^(?:import\s.*(?:from\s+)?['\"][^'\"]+['\"];?|export\s+(?:const|default|function)\b.*)\s*$"
)
_ADMONITION = re.compile(r"^:{3,}\s*\{?\s*\.?([A-Za-z]*)\}?\s*(.*)$")
_JSX_ELEMENT = re.compile(r"<[A-Za-z][\w.]*\s(?:[^<>{}]|\{[^{}]*\})*?[={](?:[^<>{}]|\{[^{}]*\})*/?>")
# A heading's explicit anchor, as Pandoc, kramdown and Hugo write it: "## Limits {#limits}".
_HEADING_ID = re.compile(r"\s*\{#[^}]*\}\s*$")
_FRONT_MATTER = re.compile(r"\A(?:---|\+\+\+)[ \t]*\n(.*?\n)?(---|\+\+\+|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


@dataclass
class Page:
    """A document read into headings (``level`` 1–6) and paragraphs (``level`` 0)."""

    title: str = ""
    url: str = ""
    blocks: list[tuple[int, str]] = field(default_factory=list)


def parse_markdown(text: str) -> Page:
    meta, body = front_matter(text)
    page = Page(title=_meta_text(meta.get("title")), url=_meta_text(meta.get("url") or meta.get("permalink")))
    parser = _parser()
    _read(parser, parser.parse(_without_mdx(body)), page)
    return page


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def front_matter(text: str) -> tuple[dict[str, object], str]:
    """The front matter's fields (names lower-cased) and the text after it."""
    match = _FRONT_MATTER.match(text)
    if not match or (match.group(2) == "+++") != text.startswith("+++"):
        return {}, text
    raw = match.group(1) or ""
    try:
        loaded = tomllib.loads(raw) if text.startswith("+++") else yaml.safe_load(raw)
    except (yaml.YAMLError, tomllib.TOMLDecodeError):
        loaded = _simple_fields(raw)
    if not isinstance(loaded, dict):
        return {}, text
    return {str(key).lower(): value for key, value in loaded.items()}, text[match.end() :]


def _without_mdx(body: str) -> str:
    """MDX's module lines (``import X from '…';``) dropped, and its admonitions (``:::tip Title`` …
    ``:::``, as Docusaurus and Pandoc's fenced divs write them) read as a paragraph opening with
    their kind ("Tip: Title"); code blocks untouched."""
    lines: list[str] = []
    fence = ""
    for line in body.split("\n"):
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif _MODULE_LINE.match(line):
            continue
        elif admonition := _ADMONITION.match(stripped):
            kind, title = admonition.group(1), admonition.group(2).strip()
            opening = f"{kind.capitalize()}: {title}" if kind else title
            lines += (
                ["", opening if title or not kind else f"{kind.capitalize()}:", ""] if kind or title else [""]
            )
            continue
        lines.append(line)
    return "\n".join(lines)


def _simple_fields(raw: str) -> dict[str, object]:
    """``key: value`` lines, for front matter that is not valid YAML."""
    fields: dict[str, object] = {}
    for line in raw.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-")):
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def _meta_text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _read(parser: MarkdownIt, tokens: Sequence[Token], page: Page) -> None:
    """Turn the parser's block tokens into ``page.blocks``."""
    items: list[str] = []  # the lines of the list being read
    numbers: list[int] = []  # each open list's next item number (0 in a bullet list)
    fresh_item = False  # the next paragraph starts a list item
    heading = 0  # the level of the heading being read
    header: list[str] = []
    rows: list[list[str]] = []
    in_head = in_cell = False

    def add(text: str, level: int = 0) -> None:
        if text:
            page.blocks.append((level, text))

    def flush_items() -> None:
        add("\n".join(items))
        items.clear()

    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            flush_items()
            heading = int(token.tag[1])
        elif kind in ("bullet_list_open", "ordered_list_open"):
            start = str(token.attrGet("start") or 1)
            numbers.append(0 if kind == "bullet_list_open" else int(start) if start.isdigit() else 1)
        elif kind in ("bullet_list_close", "ordered_list_close"):
            numbers.pop()
            if not numbers:
                flush_items()
        elif kind == "list_item_open":
            fresh_item = True
        elif kind in ("thead_open", "thead_close"):
            in_head = kind == "thead_open"
        elif kind == "tr_open" and not in_head:
            rows.append([])
        elif kind in ("th_open", "td_open", "th_close", "td_close"):
            in_cell = kind.endswith("_open")
        elif kind == "table_close":
            flush_items()
            add(table_text(header, rows))
            header, rows = [], []
        elif kind == "inline":
            line = inline_text(token.children or [])
            if heading:
                add(_HEADING_ID.sub("", line), heading)
                heading = 0
            elif in_cell:
                (header if in_head else rows[-1]).append(line)
            elif numbers and fresh_item:
                marker = f"{numbers[-1]}." if numbers[-1] else "-"
                numbers[-1] += 1 if numbers[-1] else 0
                if line:
                    items.append(f"{'  ' * (len(numbers) - 1)}{marker} {line}")
                fresh_item = False
            elif numbers:
                if line:
                    items.append(f"{'  ' * len(numbers)}{line}")
            else:
                add(line)
        elif kind in ("fence", "code_block"):
            flush_items()
            add(code_block(token.content, token.info if kind == "fence" else ""))
        elif kind == "html_block":
            flush_items()
            for block in fragment_blocks(token.content):
                add(
                    block.text if is_code_block(block.text) else _inline_lines(parser, block.text),
                    block.level,
                )
    flush_items()


def _inline_lines(parser: MarkdownIt, text: str) -> str:
    """Text read from HTML inside Markdown, whose cells and paragraphs may hold Markdown of their
    own (links, inline code), read line by line as Markdown's inline content."""
    return "\n".join(inline_text(parser.parseInline(line)[0].children or []) for line in text.split("\n"))


def without_link_markup(text: str) -> str:
    """Text that may carry Markdown or HTML fragments without being a page (a JSONL passage
    exported from a wiki or a help centre): HTML comments dropped, links read as their text
    (inline, by reference, images as their alternative text), and HTML line breaks read as line
    breaks. Nothing else changes: a bracket, an asterisk or a "#" of plain text stays."""
    return _links_as_text(_BREAK.sub("\n", text))


def _links_as_text(text: str) -> str:
    """HTML comments dropped (also one quoted as code: no sentence shows "<!--") and links, inline
    (also one left unclosed) or by reference, read as their text."""
    text = _COMMENT.sub("", text)
    text = _UNRESOLVED_LINK.sub(r"\1", text)
    return _UNCLOSED_LINK.sub(r"\1", _INLINE_LINK.sub(r"\1", text))


def inline_text(children: Sequence[Token]) -> str:
    """A paragraph's inline content as plain words: links as their text, no images, no HTML, no
    emphasis or code marks."""
    parts: list[str] = []
    for child in children:
        kind = child.type
        if kind == "text":
            parts.append(child.content)
        elif kind == "code_inline":  # kept from the JSX clean-up below, which reads only the prose
            parts.append(child.content.replace("<", "\x00"))
        elif kind in ("softbreak", "hardbreak") or (
            kind == "html_inline" and _BREAK.fullmatch(child.content)
        ):
            parts.append(" ")
    text = _JSX_ELEMENT.sub("", "".join(parts)).replace("\x00", "<")
    return " ".join(_links_as_text(text).split())
