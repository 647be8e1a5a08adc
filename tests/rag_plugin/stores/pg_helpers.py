"""Test helpers for the PostgreSQL store: recount the lexical state from the chunks' text."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.stores.postgres import blocks as term_blocks
from rag_plugin.stores.postgres import near
from rag_plugin.stores.postgres.migrations import MIGRATIONS
from rag_plugin.stores.prepared import chunk_words


def drop_schema(dsn: str, schema: str) -> None:
    """Drop ``schema`` and everything in it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def statistics_mismatches(
    dsn: str, schema: str, collection: str, owner: str | None = None
) -> list[str]:
    """Compare every stored count of a collection with a from-scratch recount of its chunks.

    Recounts N, Σdl and the document count from the rows, and each chunk's postings and every
    term's df by tokenising the chunk texts again. Returns one line per difference.
    """

    def table(name: str) -> sql.Identifier:
        return sql.Identifier(schema, f"rag_{name}")

    with psycopg.connect(dsn) as conn:
        # One snapshot for every count, whatever other sessions commit meanwhile.
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        found = conn.execute(
            sql.SQL(
                "SELECT id, analyzer, document_count, chunk_count, token_count FROM {}"
                " WHERE name = %s AND owner IS NOT DISTINCT FROM %s"
            ).format(table("collections")),
            (collection, owner),
        ).fetchone()
        if found is None:
            return [f"collection {collection!r} does not exist"]
        collection_id, analyzer_name, documents, chunks, tokens = found
        analyzer = get_analyzer(analyzer_name)
        rows = conn.execute(
            sql.SQL("SELECT id, content, token_count FROM {} WHERE collection_id = %s").format(
                table("chunks")
            ),
            (collection_id,),
        ).fetchall()
        postings = conn.execute(
            sql.SQL(
                "SELECT u.id, b.term, u.tf, u.dl FROM {} b,"
                " unnest(b.chunk_ids, b.tfs, b.dls) AS u(id, tf, dl) WHERE b.collection_id = %s"
            ).format(table("term_blocks")),
            (collection_id,),
        ).fetchall()
        # Each block: ascending ids inside its recorded range, at most BLOCK_SIZE of them, its
        # level that of its size.
        block_rows = [
            found
            for kind, key in (("term_blocks", "term"), ("word_blocks", "word"))
            for found in conn.execute(
                sql.SQL(
                    "SELECT {}, block, level, first_id, last_id, chunk_ids FROM {}"
                    " WHERE collection_id = %s"
                ).format(sql.Identifier(key), table(kind)),
                (collection_id,),
            ).fetchall()
        ]
        forward = {
            chunk_id: (terms, words)
            for chunk_id, terms, words in conn.execute(
                sql.SQL(
                    "SELECT f.chunk_id, f.terms, f.words FROM {} f JOIN {} c ON c.id = f.chunk_id"
                    " WHERE c.collection_id = %s"
                ).format(table("chunk_terms"), table("chunks")),
                (collection_id,),
            ).fetchall()
        }
        vocabulary: dict[str, int] = dict(
            conn.execute(
                sql.SQL("SELECT term, df FROM {} WHERE collection_id = %s").format(
                    table("vocabulary")
                ),
                (collection_id,),
            ).fetchall()
        )
        word_rows = conn.execute(
            sql.SQL(
                "SELECT u.id, b.word FROM {} b, unnest(b.chunk_ids) AS u(id)"
                " WHERE b.collection_id = %s"
            ).format(table("word_blocks")),
            (collection_id,),
        ).fetchall()
        word_df: dict[str, int] = dict(
            conn.execute(
                sql.SQL("SELECT word, df FROM {} WHERE collection_id = %s").format(
                    table("word_vocabulary")
                ),
                (collection_id,),
            ).fetchall()
        )
        # The near-entry index: the schema's (migration 16), read for this collection's
        # entries, or before it one per collection and vocabulary.
        shared_keys = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}".rag_near_keys',)
        ).fetchone()[0]
        deletion_rows = {
            name: set(
                conn.execute(
                    sql.SQL("SELECT key, entry FROM {} WHERE entry = ANY(%s)").format(
                        table("near_keys")
                    ),
                    (list(entries),),
                ).fetchall()
                if shared_keys
                else conn.execute(
                    sql.SQL("SELECT key, entry FROM {} WHERE collection_id = %s").format(
                        table(f"{name}_deletes")
                    ),
                    (collection_id,),
                ).fetchall()
            )
            for name, entries in (("term", vocabulary), ("word", word_df))
        }
        # Every chunk's row in the filter table, with the same collection and metadata (and,
        # from migration 14, its vector's signature), and no row there for a chunk that is
        # gone (of any collection); before migration 13 there is no such table.
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = 'rag_chunk_filters'",
                (schema,),
            ).fetchall()
        }
        signature = (
            " AND f.signature = binary_quantize(c.embedding)" if "signature" in columns else ""
        )
        filter_rows = (
            []
            if not columns
            else conn.execute(
                sql.SQL(
                    "SELECT c.id, f.chunk_id FROM {chunks} c FULL JOIN {filters} f"
                    " ON f.chunk_id = c.id AND f.collection_id = c.collection_id"
                    " AND f.metadata = c.metadata{signature}"
                    " WHERE (c.id IS NULL OR f.chunk_id IS NULL)"
                    " AND (c.collection_id = %s OR c.id IS NULL)"
                ).format(
                    chunks=table("chunks"),
                    filters=table("chunk_filters"),
                    signature=sql.SQL(signature),
                ),
                (collection_id,),
            ).fetchall()
        )
        document_rows = conn.execute(
            sql.SQL(
                "SELECT count(*), coalesce(sum(chunk_count), 0) FROM {} WHERE collection_id = %s"
            ).format(table("documents")),
            (collection_id,),
        ).fetchone()
        # From migration 15: the bytes of chunk text the collection holds.
        stored_bytes = conn.execute(
            sql.SQL(
                "SELECT to_jsonb(k) -> 'text_bytes', (SELECT coalesce(sum(octet_length(content)),"
                " 0) FROM {} WHERE collection_id = k.id) FROM {} k WHERE k.id = %s"
            ).format(table("chunks"), table("collections")),
            (collection_id,),
        ).fetchone()
    problems: list[str] = []
    if (
        stored_bytes is not None
        and stored_bytes[0] is not None
        and (int(stored_bytes[0]) != int(stored_bytes[1]))
    ):
        problems.append(f"text_bytes {stored_bytes[0]} != {stored_bytes[1]}")
    expected_postings: set[tuple[int, str, int, int]] = set()
    df: Counter[str] = Counter()
    total = 0
    for chunk_id, content, stored_length in rows:
        terms = analyzer.tokens(content)
        total += len(terms)
        if stored_length != len(terms):
            problems.append(f"chunk {chunk_id}: dl {stored_length} != {len(terms)}")
        for term, tf in Counter(terms).items():
            expected_postings.add((chunk_id, term, tf, len(terms)))
        df.update(set(terms))
    for term, block, level, first, last, ids in block_rows:
        size_level = int(math.log(len(ids), 8) + 1e-9) if ids else -1
        expected_level = min(term_blocks.FULL_LEVEL, size_level)
        if (
            not ids
            or ids != sorted(set(ids))
            or (first, last) != (ids[0], ids[-1])
            or len(ids) > term_blocks.BLOCK_SIZE
            or level != expected_level
        ):
            problems.append(f"key {term!r}: block {block} is malformed")
    expected_forward = {
        chunk_id: (sorted(set(analyzer.tokens(content))), chunk_words(content))
        for chunk_id, content, _ in rows
    }
    stored_forward = {
        chunk_id: (sorted(terms), sorted(words)) for chunk_id, (terms, words) in forward.items()
    }
    if stored_forward != expected_forward:
        problems.append("the chunks' forward terms or words differ from their texts")
    if set(postings) != expected_postings or len(postings) != len(expected_postings):
        problems.append(
            f"postings differ: {len(set(postings) - expected_postings)} extra, "
            f"{len(expected_postings - set(postings))} missing"
        )
    if vocabulary != dict(df):
        diff = {t for t in set(vocabulary) | set(df) if vocabulary.get(t) != df.get(t)}
        problems.append(f"df differs for {len(diff)} terms, e.g. {sorted(diff)[:5]}")
    expected_words = {
        (chunk_id, word) for chunk_id, content, _ in rows for word in chunk_words(content)
    }
    if sorted(word_rows) != sorted(expected_words) or len(word_rows) != len(set(word_rows)):
        problems.append(f"word postings differ: {len(set(word_rows) ^ expected_words)} rows")
    if word_df != dict(Counter(word for _, word in expected_words)):
        problems.append("word df differs")
    for name, entries in (("term", vocabulary), ("word", word_df)):
        expected_keys = {(key, entry) for entry in entries for key in near.entry_keys(entry)}
        if deletion_rows[name] != expected_keys:
            problems.append(
                f"{name} deletion keys differ: {len(deletion_rows[name] ^ expected_keys)}"
            )
    if filter_rows:
        problems.append(f"filter rows differ from the chunks': {filter_rows[:5]}")
    if (chunks, tokens) != (len(rows), total):
        problems.append(f"N, sum(dl) stored {(chunks, tokens)} != recounted {(len(rows), total)}")
    if document_rows is None or (documents, chunks) != tuple(document_rows):
        problems.append(f"documents/chunks stored {(documents, chunks)} != rows {document_rows}")
    return problems


def downgrade_to_version_15(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migration 16 in ``schema``: a near-entry index per collection and vocabulary,
    holding the keys of the entries it holds."""

    def run(statement: str) -> None:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))

    for kind, vocabulary, column in (
        ("term", "vocabulary", "term"),
        ("word", "word_vocabulary", "word"),
    ):
        run(
            f"CREATE TABLE {{schema}}.rag_{kind}_deletes (collection_id bigint NOT NULL,"
            ' key text COLLATE "C" NOT NULL, entry text COLLATE "C" NOT NULL,'
            " PRIMARY KEY (collection_id, key, entry))"
        )
        run(
            f"INSERT INTO {{schema}}.rag_{kind}_deletes (collection_id, key, entry)"  # noqa: S608
            f" SELECT v.collection_id, n.key, n.entry FROM {{schema}}.rag_{vocabulary} v"
            f" JOIN {{schema}}.rag_near_keys n ON n.entry = v.{column}"
        )
    run("DROP TABLE {schema}.rag_near_keys")
    run("DELETE FROM {schema}.rag_schema_version WHERE version >= 16")


def downgrade_to_version_14(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migrations 15 and 16 in ``schema``: no bytes of text on the collection rows."""
    downgrade_to_version_15(conn, schema)
    conn.execute(
        sql.SQL("ALTER TABLE {schema}.rag_collections DROP COLUMN text_bytes").format(
            schema=sql.Identifier(schema)
        )
    )
    conn.execute(
        sql.SQL("DELETE FROM {schema}.rag_schema_version WHERE version >= 15").format(
            schema=sql.Identifier(schema)
        )
    )


def downgrade_to_version_13(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migrations 14 and 15 in ``schema``: the filter table without the vectors'
    signatures."""

    def run(statement: str) -> None:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))

    downgrade_to_version_14(conn, schema)
    run("ALTER TABLE {schema}.rag_chunk_filters DROP COLUMN signature")
    run("DELETE FROM {schema}.rag_schema_version WHERE version >= 14")


def downgrade_to_version_12(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migration 13 (and later ones) in ``schema``: no filter table, the GIN index on
    the chunk rows."""

    def run(statement: str) -> None:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))

    downgrade_to_version_14(conn, schema)

    run("DROP TABLE {schema}.rag_chunk_filters")
    run(
        "CREATE INDEX rag_chunks_metadata ON {schema}.rag_chunks"
        " USING gin (metadata jsonb_path_ops)"
    )
    run("DELETE FROM {schema}.rag_schema_version WHERE version >= 13")


def downgrade_to_version_11(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migrations 12 and 13 in ``schema``: only entries of at most ten characters have
    deletion keys, and the trigram indexes are back."""

    def run(statement: str) -> None:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))

    downgrade_to_version_12(conn, schema)
    for table in ("rag_term_deletes", "rag_word_deletes"):
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE char_length(entry) > %s").format(
                sql.Identifier(schema, table)
            ),
            (near.PREFIX,),
        )
    (trigram_indexes,) = MIGRATIONS[7].statements  # migration 8's step, which 12 undid
    assert MIGRATIONS[7].version == 8
    assert callable(trigram_indexes)
    trigram_indexes(conn, schema)
    run("DELETE FROM {schema}.rag_schema_version WHERE version >= 12")


def downgrade_to_version_9(conn: psycopg.Connection[Any], schema: str) -> None:
    """Undo migrations 10 to 12 in ``schema``: postings back to one row per posting, and no
    deletion keys, as before."""

    def run(statement: str) -> None:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))

    downgrade_to_version_11(conn, schema)

    run(
        "CREATE TABLE {schema}.rag_postings (collection_id bigint NOT NULL,"
        ' term text COLLATE "C" NOT NULL, chunk_id bigint NOT NULL, tf integer NOT NULL,'
        " dl integer NOT NULL, PRIMARY KEY (collection_id, term, chunk_id) INCLUDE (tf, dl))"
    )
    run(
        "INSERT INTO {schema}.rag_postings SELECT b.collection_id, b.term, u.id, u.tf, u.dl"
        " FROM {schema}.rag_term_blocks b, unnest(b.chunk_ids, b.tfs, b.dls) AS u(id, tf, dl)"
    )
    run("CREATE INDEX rag_postings_chunk ON {schema}.rag_postings (chunk_id)")
    run(
        "CREATE INDEX rag_postings_by_impact ON {schema}.rag_postings"
        " (collection_id, term, tf DESC, dl) INCLUDE (chunk_id)"
    )
    run(
        "CREATE TABLE {schema}.rag_words (collection_id bigint NOT NULL,"
        ' word text COLLATE "C" NOT NULL, chunk_id bigint NOT NULL,'
        " PRIMARY KEY (collection_id, word, chunk_id))"
    )
    run(
        "INSERT INTO {schema}.rag_words SELECT b.collection_id, b.word, u.id"
        " FROM {schema}.rag_word_blocks b, unnest(b.chunk_ids) AS u(id)"
    )
    run("CREATE INDEX rag_words_chunk ON {schema}.rag_words (chunk_id, word)")
    run(
        "DROP TABLE {schema}.rag_term_blocks, {schema}.rag_word_blocks,"
        " {schema}.rag_chunk_terms, {schema}.rag_term_deletes, {schema}.rag_word_deletes"
    )
    run("DELETE FROM {schema}.rag_schema_version WHERE version >= 10")
