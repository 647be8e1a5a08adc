"""The near-entry index's deletion keys: the same in Python and SQL, and never missing a pair
of words within two edits."""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import sql
from rapidfuzz.distance import Levenshtein

from rag_plugin.stores.postgres.near import deletion_keys, keys_sql


def test_deletion_keys_of_a_short_word() -> None:
    assert deletion_keys("abc") == {"abc", "bc", "ac", "ab", "a", "b", "c"}
    assert deletion_keys("ab", 1) == {"ab", "a", "b"}
    assert deletion_keys("a") == {"a", ""}


@pytest.mark.parametrize("word", ["straße", "κb", "10%", "a_b", "ñu", "x", "internal"])
def test_sql_makes_the_keys_python_makes(dsn: str, word: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            sql.SQL("SELECT key FROM (SELECT %s::text AS w) AS t, LATERAL ({}) AS k").format(
                keys_sql("t.w")
            ),
            (word,),
        ).fetchall()
    assert {key for (key,) in rows} == deletion_keys(word)
    assert len(rows) == len(deletion_keys(word))  # each once


def test_words_within_two_edits_always_share_a_key() -> None:
    rng = random.Random(7)
    alphabet = "abcé"
    words = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(400)})
    keys = {word: deletion_keys(word) for word in words}
    pairs = 0
    for a in words:
        for b in words:
            distance = Levenshtein.distance(a, b)
            if distance <= 2:
                pairs += 1
                assert keys[a] & keys[b], (a, b)
                assert deletion_keys(a, distance) & keys[b], (a, b)
    assert pairs > 1000
