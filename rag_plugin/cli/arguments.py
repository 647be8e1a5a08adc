"""Argument types the ``ragctl`` sub-commands share: positive numbers and ``KEY=VALUE``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

__all__ = ["key_value", "positive"]


def key_value(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as a pair; VALUE is JSON when it parses as a number, boolean or string,
    else the text itself (``page=3`` is 3, ``topic=birds`` is "birds")."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        return key, raw
    return key, value if isinstance(value, str | int | float | bool) else raw


def positive(kind: Callable[[str], float], most: int | None = None) -> Callable[[str], Any]:
    """An argparse type that accepts only numbers above zero (and not above ``most``)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text!r}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most}, got {text!r}")
        return value

    return parse
