"""Structured logs: one JSON object per line for events logged with ``extra={"event": ...}``."""

from __future__ import annotations

import json
import logging
from typing import Any

# Attributes every LogRecord has; anything else was passed through ``extra``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Render a record as JSON: time, level, logger, message and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        body.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)
