"""Making text safe for a Teams Adaptive Card: nothing from a document or a model may mention people,
render a link that is not a source's URL, or add formatting.

Adaptive Card ``TextBlock`` text is a Markdown subset (bold, italic, lists, ``[title](url)``); HTML is
not rendered and a mention needs an entity that Confer never sends. Still, ``<at>`` and every
Markdown sign are escaped with CommonMark backslashes, line breaks are flattened (no lists), and bare
URLs and ``{{`` (the card's date functions) are broken with a zero-width space. A code block is
shown a line at a time (``code_line``), each neutralized the same way.
"""

import re
from urllib.parse import quote, urlsplit

ZERO_WIDTH = "\u200b"
_MARKDOWN = re.compile(r"([\\`*_~\[\]<>])")
_URL_SCHEME = re.compile(r"\b(https?|ftp|mailto|file|msteams|tel|sip)(:)", re.IGNORECASE)
_WWW = re.compile(r"\b(www)(\.)", re.IGNORECASE)
_LIST_START = re.compile(r"^(\s*)([-+]|\d+[.)])(\s)")
_SPACES = re.compile(r"\s+")


def neutralize(text: str) -> str:
    """One line of plain text that renders as itself in a ``TextBlock``."""
    text = _SPACES.sub(" ", text).strip()
    text = _MARKDOWN.sub(r"\\\1", text)
    text = _LIST_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}{m.group(3)}", text)
    text = _URL_SCHEME.sub(lambda m: m.group(1) + ZERO_WIDTH + m.group(2), text)
    text = text.replace("{{", "{" + ZERO_WIDTH + "{")  # no {{DATE()}} or {{TIME()}} functions
    return _WWW.sub(lambda m: m.group(1) + ZERO_WIDTH + m.group(2), text)


def code_line(line: str) -> str:
    """One line of a code block that renders as itself in a monospace ``TextBlock``: ``neutralize``d,
    its indentation kept as no-break spaces (which Markdown neither strips nor reads as markup)."""
    line = line.expandtabs(4)
    return "\u00a0" * (len(line) - len(line.lstrip(" "))) + neutralize(line)


def safe_url(url: str) -> str | None:
    """The URL if it is a plain http(s) address that is safe inside ``[title](url)``; else None."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        return None
    return quote(url, safe=":/?#@!$&'*+,;=%-._~")  # parentheses, brackets and <> become %xx


def safe_link(url: str, title: str) -> str:
    """``[title](url)`` for a source's http(s) URL; the neutralized title alone for anything else."""
    label = neutralize(title) or neutralize(url)
    target = safe_url(url)
    return f"[{label}]({target})" if target else label
