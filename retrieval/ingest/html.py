"""Local HTML files, and HTML written inside Markdown, read as headings and paragraphs.

A page's own text is kept and its furniture dropped: scripts, styles, forms and embedded media; the
site's navigation, banner, footer and side panels (``nav``, ``aside``, a ``header`` or ``footer``
outside the page's article, and what ARIA roles or the usual class and id names mark as such:
``breadcrumb``, ``sidebar``, ``toc``, ``cookie``…); and hidden elements. When the page marks its
main content (``main``, ``role="main"``, or a single ``article``), only that is read. A table of data
is read row by row (``retrieval.ingest.tables``), preformatted text is a code block
(``retrieval.text.code_block``), and comments are dropped.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

from bs4 import BeautifulSoup
from bs4.element import Comment, Tag

from retrieval.ingest.tables import table_text
from retrieval.text import code_block

# Never text a reader reads as the page's.
_NOT_TEXT = (
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "video",
    "audio", "form", "button", "select", "input", "textarea", "dialog", "menu", "nav", "aside",
)  # fmt: skip
# ARIA landmarks of a site's furniture (https://www.w3.org/TR/wai-aria-1.2/#landmark_roles).
_FURNITURE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
)
# Words of a class or id that name furniture in site templates ("site-nav", "breadcrumbs", "toc").
_FURNITURE_NAMES = frozenset(
    {"nav", "navbar", "navigation", "breadcrumb", "breadcrumbs", "sidebar", "toc", "cookie", "cookies"}
    | {"skip", "skiplink", "masthead", "footer", "menu", "topbar"}
)
_SECTIONING = ("main", "article")
_BLOCK_TAGS = ("p", "div", "ul", "ol", "dl", "table", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6")
_READ = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "dd", "dt", "table", "td", "th", "caption")
_NAME_WORDS = re.compile(r"[-_\s]+")


@dataclass(frozen=True)
class Block:
    """A heading (``level`` 1–6) or a paragraph (``level`` 0) of a page's text."""

    level: int
    text: str


def parse_page(text: str) -> tuple[str, str, list[Block]]:
    """A whole page: its title, canonical address and blocks."""
    soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text(" ", strip=True).split()) if soup.title else ""
    canonical = soup.find("link", rel="canonical")
    url = str(canonical.get("href", "")) if isinstance(canonical, Tag) else ""
    _drop_furniture(soup)
    root: Tag = soup.body or soup
    main = soup.find("main") or soup.find(True, attrs={"role": "main"})
    articles = soup.find_all("article")
    if isinstance(main, Tag):
        root = main
    elif len(articles) == 1 and isinstance(articles[0], Tag):
        root = articles[0]
    return title, url, list(_blocks(root))


def fragment_blocks(html: str) -> list[Block]:
    """HTML written inside another document (a table or a ``<details>`` in Markdown)."""
    soup = BeautifulSoup(html, "html.parser")
    _drop_furniture(soup)
    return list(_blocks(soup))


def _drop_furniture(soup: BeautifulSoup) -> None:
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for tag in soup.find_all(_NOT_TEXT):
        tag.decompose()
    for tag in soup.find_all(["header", "footer"]):
        if tag.find_parent(_SECTIONING) is None:
            tag.decompose()
    for tag in soup.find_all(True):
        if tag.decomposed or tag.name in ("html", "body", "main", "article"):
            continue
        if _is_furniture(tag):
            tag.decompose()
    # A space where a block or a line break ends, so text is read without separators between
    # inline elements ("<code>dest/</code>, over" reads "dest/, over") and none glues two blocks.
    for tag in soup.find_all([*_BLOCK_TAGS, "br", "li", "td", "th", "dt", "dd", "tr", "section"]):
        if tag.name != "pre" and tag.find_parent("pre") is None:
            tag.append(" ")
            tag.insert_before(" ")


def _is_furniture(tag: Tag) -> bool:
    attrs = tag.attrs or {}
    if attrs.get("hidden") is not None or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if str(attrs.get("role", "")).lower() in _FURNITURE_ROLES:
        return True
    classes: object = attrs.get("class") or []
    names = [*(map(str, classes) if isinstance(classes, list) else [str(classes)]), str(attrs.get("id", ""))]
    return any(word in _FURNITURE_NAMES for name in names for word in _NAME_WORDS.split(name.lower()))


def _blocks(root: Tag | BeautifulSoup) -> Iterator[Block]:
    data_tables: dict[int, bool] = {}  # each table's ``_is_data_table``, by identity
    for element in root.find_all(_READ):
        if not isinstance(element, Tag) or element.find_parent("pre") is not None:
            continue
        if element.name == "pre":
            code = code_block(element.get_text())
            if code:
                yield Block(0, code)
            continue
        table = element if element.name == "table" else element.find_parent("table")
        if table is not None and id(table) not in data_tables:
            data_tables[id(table)] = _is_data_table(table)
        if table is not None and data_tables[id(table)]:
            if element is table:
                rows = table_text(*_table_rows(table))
                if rows:
                    yield Block(0, rows)
            continue
        if element.name == "table":
            continue  # a layout table: its cells are read one by one
        if element.name in ("td", "th") and element.find(_BLOCK_TAGS) is not None:
            continue  # a layout cell holding paragraphs: they are read by themselves
        if element.name in ("p", "li") and element.find_parent(["li", "dd"]) is not None:
            continue  # already taken with its container
        if element.name in ("p", "li") and _in_plain_cell(element):
            continue
        content = _text(element)
        if content:
            yield Block(
                int(element.name[1]) if element.name[0] == "h" and element.name[1:].isdigit() else 0, content
            )


def _text(element: Tag) -> str:
    return " ".join(element.get_text().split())


def _in_plain_cell(element: Tag) -> bool:
    """Whether a paragraph sits in a cell that is read whole (one without other blocks)."""
    cell = element.find_parent(["td", "th"])
    return cell is not None and cell.find(_BLOCK_TAGS) is None


def _is_data_table(table: Tag) -> bool:
    """A table of values, as opposed to one laying out a page: no paragraphs, lists or tables in
    its cells."""
    return all(cell.find(_BLOCK_TAGS) is None for cell in table.find_all(["td", "th"]))


def _table_rows(table: Tag) -> tuple[list[str], list[list[str]]]:
    rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
    cells = [[_text(c) for c in row.find_all(["td", "th"])] for row in rows]
    if rows and all(c.name == "th" for c in rows[0].find_all(["td", "th"])) and rows[0].find("th"):
        return cells[0], cells[1:]
    return [], cells
