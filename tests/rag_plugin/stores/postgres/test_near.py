"""The near-entry index's deletion keys: the same in Python and SQL, and never missing a pair
of words within two edits, however long (the keys are of the first ten characters); one
index for the schema's collections, written once per word, emptied of a deleted collection's
own words, pruned, and written by concurrent writers without deadlock."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from rapidfuzz.distance import Levenshtein

from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres.near import PREFIX, deletion_keys, entry_keys, keys_sql

from ..pg_helpers import statistics_mismatches
from ..store_contract import chunk_inputs


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


# -- one index for the schema ----------------------------------------------------------


def _key_rows(dsn: str, schema: str) -> set[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            sql.SQL("SELECT key, entry FROM {}").format(sql.Identifier(schema, "rag_near_keys"))
        ).fetchall()
    return {(key, entry) for key, entry in rows}


def _write(store: PostgresStore, name: str, texts: list[str]) -> CollectionInfo:
    try:
        info = store.get_collection(name)
    except CollectionNotFoundError:
        info = store.create_collection(name, dimensions=2, embedding_model="m", analyzer="english")
    _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * len(texts))
    store.upsert_document(info, DocumentInput(source="doc"), chunks)
    return store.get_collection(name)


def test_a_collection_of_known_words_writes_no_keys_and_corrects_as_the_first(
    dsn: str, pg_schema: str
) -> None:
    store = PostgresStore(dsn, schema=pg_schema)
    first = _write(store, "first", ["photosynthesis in chloroplasts of green leaves"])
    keys = _key_rows(dsn, pg_schema)
    # Every entry of both vocabularies (English stems and words) is under each of its keys.
    entries = {entry for _, entry in keys}
    assert {"photosynthesis", "chloroplast", "chloroplasts", "green"} <= entries
    assert keys == {(key, entry) for entry in entries for key in entry_keys(entry)}

    second = _write(store, "second", ["green leaves in photosynthesis"])
    assert _key_rows(dsn, pg_schema) == keys  # nothing new to index
    for info in (first, second):
        assert store.correct_query(info, "photosyntesis").query == "photosynthesis"
        assert [hit.chunk.document_id for hit in store.fuzzy(info, "photosintesis", 5)]
    # The second collection does not find the first's words it does not hold.
    assert store.correct_query(second, "chloroplastz").query == "chloroplastz"
    assert not store.fuzzy(second, "chloroplastz", 5)
    store.close()


def test_a_deleted_collection_takes_the_keys_of_words_only_it_held(
    dsn: str, pg_schema: str
) -> None:
    store = PostgresStore(dsn, schema=pg_schema)
    _write(store, "kept", ["shared words stay"])
    _write(store, "gone", ["shared words and a secretword"])
    assert "secretword" in {entry for _, entry in _key_rows(dsn, pg_schema)}
    store.delete_collection("gone")
    entries = {entry for _, entry in _key_rows(dsn, pg_schema)}
    assert "secretword" not in entries
    assert {"shared", "words", "stay"} <= entries
    assert store.correct_query(store.get_collection("kept"), "sharde").query == "shared"
    store.close()


def test_pruning_deletes_the_keys_of_words_no_collection_holds(dsn: str, pg_schema: str) -> None:
    store = PostgresStore(dsn, schema=pg_schema)
    info = _write(store, "docs", ["alpha beta gamma"])
    # Replaced: gamma leaves the vocabularies, its keys stay until pruned.
    _write(store, "docs", ["alpha beta delta"])
    assert "gamma" in {entry for _, entry in _key_rows(dsn, pg_schema)}
    removed = store.prune_near_keys()
    entries = {entry for _, entry in _key_rows(dsn, pg_schema)}
    assert removed == len(entry_keys("gamma"))
    assert "gamma" not in entries
    assert {"alpha", "beta", "delta"} <= entries
    assert store.prune_near_keys() == 0
    assert store.correct_query(info, "delte").query == "delta"
    store.close()


def test_writers_of_new_words_to_two_collections_never_deadlock(dsn: str, pg_schema: str) -> None:
    # Each round both writers bring the same new words (terms and words alike), in opposite
    # orders: their key rows wait for each other, and must never wait in a circle.
    store = PostgresStore(dsn, schema=pg_schema)
    for name in ("left", "right"):
        store.create_collection(name, dimensions=2, embedding_model="m")
    errors: list[BaseException] = []

    def write(name: str, texts: list[str]) -> None:
        try:
            info = store.get_collection(name)
            _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * len(texts))
            store.upsert_document(info, DocumentInput(source=texts[0][:20]), chunks)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    rng = random.Random(7)
    for round_ in range(15):
        words = [f"w{round_}x{n}{rng.choice('abcdefgh')}ing" for n in range(200)]
        texts = [" ".join(words[i : i + 20]) for i in range(0, len(words), 20)]
        threads = [
            threading.Thread(target=write, args=("left", texts)),
            threading.Thread(target=write, args=("right", texts[::-1])),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
    for name in ("left", "right"):
        assert not statistics_mismatches(dsn, pg_schema, name)
    store.close()
