"""Structured JSON logs on stderr.

Under the stdio transport stdout carries the MCP protocol and nothing else, so every log
line of every library goes to stderr, one JSON object per line. Pass the session a line
concerns as ``extra={"session": name}`` and it is bound as a field.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
# uvicorn adds "color_message", the same message with terminal colour codes: noise in JSON.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower().replace("warning", "warn"),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LEVELS[level])
    # Library chatter below warnings is noise for an agent's operator.
    for noisy in ("mcp", "httpx", "uvicorn.access", "django.db.backends", "axes"):
        logging.getLogger(noisy).setLevel(max(LEVELS[level], logging.WARNING))
