"""Logging: one line per event, plain or JSON (``CONFER_LOG_FORMAT=json``), set up once per process.

Context travels in ``extra=`` (question id, collection, timings, outcome). Message text and secrets
are never logged above DEBUG: callers pass ids and numbers, not what people wrote.
"""

import json
import logging
import sys
from datetime import UTC, datetime

from bot.telemetry import current_trace_id

# LogRecord attributes that are not "extra" context.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}
_NOISY = (
    "elastic_transport",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "openai",
    "slack_bolt",
    "aiohttp.access",
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, str | int | float | bool | None) else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    """``time level logger: event key=value …``, one line per event."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = " ".join(
            f"{key}={value}"
            for key, value in record.__dict__.items()
            if key not in _STANDARD and not key.startswith("_")
        )
        return f"{line} {context}" if context else line


class TraceIdFilter(logging.Filter):
    """Each line logged inside an exported question's trace carries its ``trace_id``, the id
    Jaeger (or any OTLP backend) finds the question by."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = current_trace_id()
        if trace_id:
            record.trace_id = trace_id
        return True


def configure_logging(level: str, fmt: str = "plain") -> None:
    """Logs go to stderr so ``--json`` keeps stdout clean."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(TraceIdFilter())
    handler.setFormatter(
        JsonFormatter()
        if fmt == "json"
        else PlainFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level, logging.INFO))
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
