"""The near-entry index's deletion keys: the same in Python and SQL, and never missing a pair
of words within two edits, however long (the keys are of the first ten characters)."""

from __future__ import annotations

import random
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from rapidfuzz.distance import Levenshtein

from rag_plugin.stores.postgres.near import PREFIX, deletion_keys, entry_keys, keys_sql


def test_deletion_keys_of_a_short_word() -> None:
    assert deletion_keys("abc") == {"abc", "bc", "ac", "ab", "a", "b", "c"}
    assert deletion_keys("ab", 1) == {"ab", "a", "b"}
    assert deletion_keys("a") == {"a", ""}


def test_an_entry_is_keyed_by_its_first_ten_characters() -> None:
    assert entry_keys("internal") == deletion_keys("internal")
    assert entry_keys("internationalization") == deletion_keys("internatio")
    assert len(entry_keys("internationalization")) == 1 + PREFIX + PREFIX * (PREFIX - 1) // 2


@pytest.mark.parametrize(
    "word", ["straße", "κb", "10%", "a_b", "ñu", "x", "internal", "internationalisation"]
)
def test_sql_makes_the_keys_python_makes(dsn: str, word: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            sql.SQL("SELECT key FROM (SELECT %s::text AS w) AS t, LATERAL ({}) AS k").format(
                keys_sql("t.w")
            ),
            (word,),
        ).fetchall()
    assert {key for (key,) in rows} == entry_keys(word)
    assert len(rows) == len(entry_keys(word))  # each once


def close_pairs_sharing_keys(words: list[str], keys_of: Callable[..., set[str]]) -> int:
    """How many ordered pairs of ``words`` are within two edits; asserts that each pair shares
    a key (``a``'s keys at its own distance from ``b`` among them)."""
    keys = {word: keys_of(word) for word in words}
    pairs = 0
    for a in words:
        for b in words:
            distance = Levenshtein.distance(a, b)
            if distance <= 2:
                pairs += 1
                assert keys[a] & keys[b], (a, b)
                assert keys_of(a, distance) & keys[b], (a, b)
    return pairs


def test_words_within_two_edits_always_share_a_key() -> None:
    rng = random.Random(7)
    alphabet = "abcé"
    words = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(400)})
    assert close_pairs_sharing_keys(words, deletion_keys) > 1000


def test_long_words_within_two_edits_always_share_a_prefix_key() -> None:
    # Words around the cut (eight to fourteen characters) over a small alphabet, so that many
    # pairs are within two edits with the edits before, across and after the tenth character.
    rng = random.Random(11)
    base = ["".join(rng.choices("ab", k=rng.randint(8, 14))) for _ in range(60)]
    words = set(base)
    for word in base:  # near variants of each, so close pairs are many
        for _ in range(6):
            variant = list(word)
            for _ in range(rng.randint(1, 2)):
                i = rng.randrange(len(variant) + 1)
                edit = rng.choice(("insert", "delete", "substitute"))
                if edit == "insert":
                    variant.insert(i, rng.choice("abé"))
                elif i < len(variant):
                    if edit == "delete":
                        del variant[i]
                    else:
                        variant[i] = rng.choice("abé")
            words.add("".join(variant))
    assert close_pairs_sharing_keys(sorted(words), entry_keys) > 2000
