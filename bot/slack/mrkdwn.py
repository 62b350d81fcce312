"""Making text safe to post: nothing from a document or a model may notify people or add links."""

import re
from urllib.parse import urlsplit

ZERO_WIDTH = "\u200b"
_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)
_URL_SCHEME = re.compile(r"\b(https?|ftp|mailto|slack|file)(:)", re.IGNORECASE)
# A dot Slack would read as part of a host name (``www.evil.example``, ``someone@evil.example``):
# a letter or digit before it, at least two letters after it.
_HOST_DOT = re.compile(r"(?<=[A-Za-z0-9-])\.(?=[A-Za-z]{2})")
_EMAIL_AT = re.compile(r"(?<=[A-Za-z0-9._%+-])@(?=[A-Za-z0-9-])")
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn gives meaning to. ``<!channel>``, ``<@U1>``,
    ``<#C1>`` and ``<url|label>`` all need ``<``: escaped, they show as plain text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def neutralize(text: str) -> str:
    """Escape, then break bare ``@here``-style words, URLs, domains, e-mail and IP addresses so
    Slack neither notifies nor auto-links them. For text that came from documents or a model."""
    text = escape(text)
    text = _BROADCAST.sub(lambda m: "@" + ZERO_WIDTH + m.group(1), text)
    text = _URL_SCHEME.sub(lambda m: m.group(1) + ZERO_WIDTH + m.group(2), text)
    return unlink_hosts(text)


def unlink_hosts(text: str) -> str:
    """Bare domains, e-mail addresses and IPv4 addresses get a zero-width space before their dots,
    so Slack cannot auto-link them; they still read the same."""
    text = _IPV4.sub(lambda m: m.group(0).replace(".", ZERO_WIDTH + "."), text)
    text = _EMAIL_AT.sub("@" + ZERO_WIDTH, text)
    return _HOST_DOT.sub(ZERO_WIDTH + ".", text)


def safe_link(url: str, label: str) -> str:
    """``<url|label>`` for an http(s) source URL; just the neutralized label for anything else."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in url for c in "<>| \n"):
        return neutralize(label)
    return f"<{escape(url.strip())}|{neutralize(label).replace('|', '¦')}>"


_BACKTICK_RUN = re.compile(r"`(?=`)")
CODE_FENCE = "```"  # what opens and closes a code block


def code_block(code: str) -> str:
    """Code from a document as a preformatted block (three backticks), in mrkdwn and in streamed
    ``markdown_text`` alike: escaped, so no mention, channel or link can be written; ``@here``-style
    words broken; and a zero-width space between backticks, so no run of them can close the block
    early. Nothing else changes (a backslash would show in the block as written): a command reads,
    and copies, as the document writes it."""
    text = _BROADCAST.sub(lambda m: "@" + ZERO_WIDTH + m.group(1), escape(code))
    return f"{CODE_FENCE}\n{_BACKTICK_RUN.sub('`' + ZERO_WIDTH, text)}\n{CODE_FENCE}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~\[\]|#])")


def neutralize_markdown(text: str) -> str:
    """``neutralize`` for streamed ``markdown_text``: the same escaping and unlinking, and markdown's
    own markup (emphasis, code, ``[label](url)`` links, headings, tables) backslash-escaped, so a
    document or a model can neither format nor link anything."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", neutralize(text))


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def plain_label(text: str, limit: int) -> str:
    """Text from documents or a model made inert for a ``plain_text`` field (a button): no markup
    characters, broadcasts, URLs or hosts; one line of at most ``limit`` characters (an ellipsis
    marks a cut at a word boundary)."""
    text = " ".join(_CONTROL.sub(" ", text).split())
    text = text.replace("<", "‹").replace(">", "›").replace("&", "＆")
    text = _BROADCAST.sub(lambda m: "@" + ZERO_WIDTH + m.group(1), text)
    text = _URL_SCHEME.sub(lambda m: m.group(1) + ZERO_WIDTH + m.group(2), text)
    text = unlink_hosts(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"
