"""The API's JSON parser: one set of rules for every request body, checked before any view.

DRF's stock parser hands ``json.loads`` whatever arrives, so a hostile body turns into a 500
(a ``RecursionError`` from 100,000 nested ``[``) or reaches the database (a NUL, which
PostgreSQL text refuses). Here a body is, or gets a 4xx naming the problem:

- **UTF-8** (RFC 8259): a ``charset`` other than UTF-8 is a 415, bytes that are not UTF-8
  a 400;
- **at most** ``RAG_API["MAX_JSON_DEPTH"]`` **levels deep** (arrays and objects; default 32);
- **no duplicate keys** in an object: ``{"limit": 1, "limit": 1000}`` is ambiguous — parsers
  disagree on which one wins, so a proxy that checks one and a server that uses the other can
  be played against each other. We refuse it rather than pick one;
- **numbers JSON can carry**: no ``NaN`` or ``Infinity``, no float that overflows to
  infinity (``1e999``); a field's own range check handles big integers;
- **text PostgreSQL can store**: no NUL character and no unpaired surrogate (``"\\ud800"``)
  in any key or string.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.utils.http import parse_header_parameters
from rest_framework import exceptions
from rest_framework.parsers import BaseParser

__all__ = ["StrictJSONParser", "check_json_tree"]


def _max_depth() -> int:
    return int(settings.RAG_API["MAX_JSON_DEPTH"])


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise exceptions.ParseError(
                f"JSON parse error - the key {json.dumps(key)} appears twice in one object; "
                "send each key once."
            )
        result[key] = value
    return result


def _constant(name: str) -> float:
    raise exceptions.ParseError(f"JSON parse error - {name} is not a JSON number.")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise exceptions.ParseError(
            f"JSON parse error - the number {text[:40]} is too large for a float."
        )
    return value


def _text_problem(text: str) -> str | None:
    """What PostgreSQL text could not store in ``text``: a NUL, or a lone surrogate (which
    strict UTF-8 cannot encode). C-speed checks: a regex character class over a 1 MB document
    took 19 ms, these take well under one (an ASCII text needs no encoding)."""
    if "\x00" in text:
        return "a NUL character"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "an unpaired surrogate (not valid Unicode)"
    return None


_Where = tuple[Any, str | int] | None
"""Where a value sits in the body: (where its parent sits, its key or index), None at the top."""


def _path(where: _Where) -> str:
    parts: list[str | int] = []
    while where is not None:
        where, part = where
        parts.append(part)
    text = ""
    for part in reversed(parts):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _bad_text(where: _Where, problem: str, what: str) -> exceptions.ParseError:
    path = _path(where)
    prefix = f"{path}: " if path else ""
    return exceptions.ParseError(f"{prefix}{what} must not contain {problem}.")


def check_json_tree(data: Any, max_depth: int) -> None:
    """Raise ``ParseError`` if ``data`` nests deeper than ``max_depth`` or holds a key or a
    string that PostgreSQL text cannot store, naming where (``metadata.a[2]``). Iterative,
    so no depth overflows the stack."""
    stack: list[tuple[Any, int, _Where]] = [(data, 0, None)]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            problem = _text_problem(value)
            if problem is not None:
                raise _bad_text(where, problem, "text")
            continue
        if not isinstance(value, Mapping | list):
            continue
        if depth >= max_depth:
            raise exceptions.ParseError(
                f"The JSON body is nested more than {max_depth} levels deep."
            )
        if isinstance(value, Mapping):
            for key, item in value.items():
                problem = _text_problem(key)
                if problem is not None:
                    raise _bad_text(where, problem, "a key")
                stack.append((item, depth + 1, (where, key)))
        else:
            stack.extend((item, depth + 1, (where, i)) for i, item in enumerate(value))


class StrictJSONParser(BaseParser):
    """``application/json`` bodies under the rules of this module."""

    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        charset = parse_header_parameters(media_type or "")[1].get("charset", "utf-8").lower()
        try:
            is_utf8 = codecs.lookup(charset).name == "utf-8"
        except LookupError:
            is_utf8 = False
        if not is_utf8:
            raise exceptions.UnsupportedMediaType(
                media_type or "", f"JSON bodies must be UTF-8, not charset={charset}."
            )
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(
                f"The body is not valid UTF-8 (byte {exc.start})."
            ) from None
        max_depth = _max_depth()
        try:
            data = json.loads(
                text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float
            )
        except RecursionError:
            raise exceptions.ParseError(
                f"The JSON body is nested more than {max_depth} levels deep."
            ) from None
        except ValueError as exc:  # json.JSONDecodeError, and ints of over 4,300 digits
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        check_json_tree(data, max_depth)
        return data
