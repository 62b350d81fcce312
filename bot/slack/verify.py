"""The first look at a request to ``/slack/events``, before Bolt sees it: is it signed by Slack, and
can it be parsed at all? Anything else is refused with 401 or 400 and one WARNING line, never a
traceback (Bolt parses bodies before it verifies them and answers malformed ones with a 500). An
Events API body parsed here is handed on (``Verified.envelope``): an event acked before Bolt looks
at it (``bot.slack.acks``) is recognised from it without parsing the body again."""

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

logger = logging.getLogger(__name__)

_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_SIGNATURE = re.compile(r"^v0=[0-9a-f]{64}$")
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Rejection:
    status: Literal[400, 401]
    reason: Literal["signature", "malformed"]


@dataclass(frozen=True)
class Verified:
    """A request signed by Slack whose body has the shape Bolt expects: ``envelope`` is its body
    when that is an Events API JSON object (``None`` for a form: commands, interactions)."""

    text: str
    envelope: dict[str, Any] | None = None


def check_request(
    verifier: SignatureVerifier, body: bytes, headers: Mapping[str, str]
) -> Rejection | Verified:
    """``Verified`` when the request is signed by Slack within the 5-minute window and its body has
    the shape Bolt expects; otherwise why it is refused."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    if not (_TIMESTAMP.match(timestamp) and _SIGNATURE.match(signature)):
        return Rejection(401, "signature")
    if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
        return Rejection(401, "signature")
    verified = _well_formed(body, headers.get("Content-Type", ""))
    if verified is None:
        return Rejection(400, "malformed")
    return verified


def _well_formed(body: bytes, content_type: str) -> Verified | None:
    try:
        text = body.decode("utf-8")
        if content_type.split(";")[0].strip().lower() == FORM:
            form = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text))
            if "payload" in form:
                return Verified(text) if _interaction(json.loads(form["payload"][0])) else None
            return Verified(text) if all(len(values) == 1 for values in form.values()) else None
        envelope = json.loads(text)
        if not _envelope(envelope):
            return None
        return Verified(text, envelope if isinstance(envelope, dict) else None)
    except (UnicodeDecodeError, ValueError):
        return None


def _envelope(data: Any) -> bool:
    """An Events API body: an object; an ``event_callback`` carries an ``event`` object whose
    string fields are strings."""
    if not isinstance(data, dict):
        return False
    if data.get("type") != "event_callback":
        return True
    event = data.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return False
    strings = ("type", "user", "channel", "text", "ts", "thread_ts", "event_ts", "team")
    return all(isinstance(event[key], str) for key in strings if key in event)


def _interaction(data: Any) -> bool:
    """An interactivity payload: an object; its ``actions``, if any, a list of objects."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return False
    actions = data.get("actions", [])
    return isinstance(actions, list) and all(isinstance(action, dict) for action in actions)
