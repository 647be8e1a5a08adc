"""The binary array parameters read back by PostgreSQL exactly as psycopg's own lists are."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.adapt import PyFormat, Transformer

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.postgres import arrays
from rag_plugin.stores.postgres.rows import packed_vectors


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        arrays.adapt(connection)
        yield connection


FLOATS = [0.0, -0.0, 1.5, -2.25, 1e-300, -1.7976931348623157e308, math.pi, 0.1]
TEXTS = ["", "a", "chemistry", "naïve ☃ 中文", "with 'quotes', commas and {braces}", "x" * 5000]


def _read(conn: psycopg.Connection[Any], cast: str, value: object) -> Any:
    row = conn.execute(f"SELECT %b::{cast}", (value,)).fetchone()
    assert row is not None
    return row[0]


def test_float8s_read_back_exactly(conn: psycopg.Connection[Any]) -> None:
    assert _read(conn, "float8[]", arrays.float8s(FLOATS)) == FLOATS


def test_float8s_take_numpy_float32_vectors(conn: psycopg.Connection[Any]) -> None:
    vector = np.array([0.1, -0.5, 3.0], dtype=np.float32)
    assert _read(conn, "float8[]", arrays.float8s(vector)) == [float(x) for x in vector]


@pytest.mark.parametrize("values", [[], [0], [7, -3, 2**31 - 1, -(2**31)]])
def test_int4s_read_back_exactly(conn: psycopg.Connection[Any], values: list[int]) -> None:
    assert _read(conn, "integer[]", arrays.int4s(values)) == values


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1])
def test_int4s_refuse_a_value_outside_the_integer_range(value: int) -> None:
    with pytest.raises(InvalidInputError, match="outside PostgreSQL's integer range"):
        arrays.int4s([1, value])


@pytest.mark.parametrize("values", [[], TEXTS, ["a", None, "b"], [None]])
def test_texts_read_back_exactly(conn: psycopg.Connection[Any], values: list[str | None]) -> None:
    assert _read(conn, "text[]", arrays.texts(values)) == values


def test_the_bytes_are_those_psycopg_sends_for_a_list() -> None:
    # A differential check of the format: psycopg's own binary dumper is the reference.
    transformer = Transformer()
    for values, built in ((FLOATS, arrays.float8s(FLOATS)), (TEXTS, arrays.texts(TEXTS))):
        expected = transformer.get_dumper(values, PyFormat.BINARY).dump(values)
        assert built.data == bytes(expected)


def test_packed_vectors_are_cut_back_into_the_vectors(conn: psycopg.Connection[Any]) -> None:
    vectors = [[0.5, -1.0, 0.25], [1.0, 2.0, 3.0]]
    values, ends = packed_vectors(vectors)
    assert ends == [3, 6]
    rows = conn.execute(
        "SELECT (%b::float8[])[e - 2 : e] FROM unnest(%s::integer[]) AS e", (values, ends)
    ).fetchall()
    assert [row[0] for row in rows] == vectors


def test_adapt_teaches_a_connection_made_before_it(dsn: str) -> None:
    with psycopg.connect(dsn) as connection:
        with pytest.raises(psycopg.ProgrammingError, match="cannot adapt"):
            connection.execute("SELECT %b::text[]", (arrays.texts(["a"]),))
        connection.rollback()
        arrays.adapt(connection)
        arrays.adapt(connection)  # a second call changes nothing
        row = connection.execute("SELECT %b::text[]", (arrays.texts(["a"]),)).fetchone()
    assert row == (["a"],)
