"""The API's JSON parser in process: every rule of portal/api/parsers.py, one case each."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rest_framework import exceptions

from portal.api.parsers import StrictJSONParser, check_json_tree

JSON = "application/json"


def parse(body: bytes | str, media_type: str = JSON) -> Any:
    raw = body.encode() if isinstance(body, str) else body
    return StrictJSONParser().parse(io.BytesIO(raw), media_type, {})


def test_a_plain_body_parses() -> None:
    assert parse('{"query": "ünïcödé 𝒳 עברית", "limit": 3, "w": 0.5}') == {
        "query": "ünïcödé 𝒳 עברית",
        "limit": 3,
        "w": 0.5,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 100_000, "nested more than 32 levels"),
        ('{"a":' * 40 + "1" + "}" * 40, "nested more than 32 levels"),
        ('{"limit": 1, "limit": 1000}', 'the key "limit" appears twice'),
        ('{"threshold": NaN}', "NaN is not a JSON number"),
        ('{"threshold": -Infinity}', "-Infinity is not a JSON number"),
        ('{"threshold": 1e999}', "too large for a float"),
        ('{"n": ' + "9" * 5000 + "}", "JSON parse error"),
        ('{"content": "a\\u0000b"}', "content: text must not contain a NUL character"),
        ('{"m": {"x": ["ok", "\\ud800"]}}', "m.x[1]: text must not contain an unpaired"),
        ('{"m": "caf\\u00e9 \\udfff"}', "m: text must not contain an unpaired"),
        ('{"m": {"a\\u0000": 1}}', "m: a key must not contain a NUL character"),
        ("{", "JSON parse error"),
    ],
)
def test_a_bad_body_is_a_parse_error_naming_the_problem(body: str, message: str) -> None:
    with pytest.raises(exceptions.ParseError) as caught:
        parse(body)
    assert message in str(caught.value.detail)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(exceptions.ParseError, match="not valid UTF-8"):
        parse(b'{"query": "caf\xe9"}')


@pytest.mark.parametrize("charset", ["latin-1", "utf-16", "nonsense"])
def test_a_charset_other_than_utf8_is_unsupported(charset: str) -> None:
    with pytest.raises(exceptions.UnsupportedMediaType) as caught:
        parse('{"a": 1}', f"{JSON}; charset={charset}")
    assert f"charset={charset}" in str(caught.value.detail)


@pytest.mark.parametrize("charset", ["utf-8", "UTF8", '"utf-8"'])
def test_utf8_by_any_of_its_names_is_accepted(charset: str) -> None:
    assert parse('{"a": 1}', f"{JSON}; charset={charset}") == {"a": 1}


def test_a_wide_body_is_not_a_deep_one() -> None:
    items = list(range(100_000))
    check_json_tree({"a": items}, max_depth=2)
    with pytest.raises(exceptions.ParseError, match="nested more than 1 levels"):
        check_json_tree({"a": items}, max_depth=1)
