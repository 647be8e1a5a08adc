"""The frozen steps of the lexical postings: BM25's term postings and the fuzzy leg's word
postings, first a row per posting, then in blocks (migrations 2, 4, 5, 7 and 10)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.stores.postgres.migrations.migration import Step

__all__ = ["BLOCKS", "IMPACT_INDEX", "IMPACT_ORDER", "PROBE_COVERING", "WORDS"]


# Exact top-k BM25 reads a term's postings by impact, which rises with tf and falls with dl:
# one index range per (term, tf), ordered by dl, serves both "the k best" and "all above τ".
IMPACT_INDEX = (
    """
    CREATE INDEX rag_postings_impact ON {schema}.rag_postings
        (collection_id, term, tf, dl) INCLUDE (chunk_id)
    """,
)

# Migration 4's words, frozen here so that the migration does not change when the live code
# does: each chunk's distinct whitespace words as the fuzzy leg scores them (what
# ``prepared.chunk_words`` computes): the text lowercased twice (as FuzzyIndex does), split on
# whitespace, each word cut to 256 characters, those of at least 2 UTF-8 bytes.
_WORD_CHARS = 256
_WORDS_BATCH = 5000


def _backfill_words(conn: psycopg.Connection[Any], schema: str) -> None:
    """Fill ``rag_words`` from every existing chunk's text."""
    target = sql.SQL("COPY {} (collection_id, word, chunk_id) FROM STDIN").format(
        sql.Identifier(schema, "rag_words")
    )
    # A server-side cursor streams the texts in batches; each batch is copied before the next
    # is fetched (one connection cannot interleave a COPY with a fetch).
    with conn.cursor(name="rag_backfill_words") as source:
        source.itersize = _WORDS_BATCH
        source.execute(
            sql.SQL("SELECT id, collection_id, content FROM {}").format(
                sql.Identifier(schema, "rag_chunks")
            )
        )
        while batch := source.fetchmany(_WORDS_BATCH):
            with conn.cursor().copy(target) as copy:
                for chunk_id, collection_id, content in batch:
                    cut = {word[:_WORD_CHARS] for word in content.lower().lower().split()}
                    for word in sorted(word for word in cut if len(word.encode()) >= 2):
                        copy.write_row((collection_id, word, chunk_id))


# The fuzzy leg's own posting list: each chunk's distinct lowercased whitespace words (the words
# fuzzy_score compares, computed by Python's lower() and split(), not SQL's) and each word's df.
# Tables first, rows from Python, keys and indexes last (one sort instead of row-by-row upkeep).
WORDS = (
    """
    CREATE TABLE {schema}.rag_words (
        collection_id bigint NOT NULL,
        word text COLLATE "C" NOT NULL,
        chunk_id bigint NOT NULL
    )
    """,
    """
    CREATE TABLE {schema}.rag_word_vocabulary (
        collection_id bigint NOT NULL,
        word text COLLATE "C" NOT NULL,
        df integer NOT NULL
    )
    """,
    _backfill_words,
    """
    INSERT INTO {schema}.rag_word_vocabulary (collection_id, word, df)
        SELECT collection_id, word, count(*) FROM {schema}.rag_words GROUP BY 1, 2
    """,
    "ALTER TABLE {schema}.rag_words ADD PRIMARY KEY (collection_id, word, chunk_id)",
    # Deletes find a chunk's words here, and fuzzy search probes candidates' words.
    "CREATE INDEX rag_words_chunk ON {schema}.rag_words (chunk_id, word)",
    "ALTER TABLE {schema}.rag_word_vocabulary ADD PRIMARY KEY (collection_id, word)",
    """
    CREATE INDEX rag_word_vocabulary_length ON {schema}.rag_word_vocabulary
        (collection_id, char_length(word))
    """,
)

# BM25 reads a common term only where its contribution can reach a threshold (lexical.py): the
# highest tfs first, and per tf the shortest chunks, without touching the table.
IMPACT_ORDER = (
    """
    CREATE INDEX rag_postings_by_impact ON {schema}.rag_postings
        (collection_id, term, tf DESC, dl) INCLUDE (chunk_id)
    """,
)

# BM25 probes a candidate chunk's query terms by (term, chunk): with tf and dl in the primary key's
# index the probe never reads the table. Built first, then swapped in as the key.
PROBE_COVERING = (
    """
    CREATE UNIQUE INDEX rag_postings_key_covering ON {schema}.rag_postings
        (collection_id, term, chunk_id) INCLUDE (tf, dl)
    """,
    """
    ALTER TABLE {schema}.rag_postings DROP CONSTRAINT rag_postings_pkey,
        ADD CONSTRAINT rag_postings_pkey PRIMARY KEY USING INDEX rag_postings_key_covering
    """,
)

# Postings as arrays, a few rows per key (blocks.py): a long query reads its terms' and close
# words' every posting in one round trip instead of row by row. The blocks and the forward
# index are built from the old tables of one row per posting, which then go with their
# indexes (the chunk index of rag_words served the fuzzy leg's probes: the forward index
# does that now).
BLOCKS: tuple[Step, ...] = (
    *(
        f"""
        CREATE TABLE {{schema}}.rag_{kind}_blocks (
            collection_id bigint NOT NULL,
            {key} text COLLATE "C" NOT NULL,
            block bigint GENERATED ALWAYS AS IDENTITY,
            level smallint NOT NULL,
            first_id bigint NOT NULL,
            last_id bigint NOT NULL,
            chunk_ids bigint[] NOT NULL,
            {payload}
            PRIMARY KEY (collection_id, {key}, block)
        )
        """
        for kind, key, payload in (
            ("term", "term", "tfs integer[] NOT NULL, dls integer[] NOT NULL,"),
            ("word", "word", ""),
        )
    ),
    """
    CREATE TABLE {schema}.rag_chunk_terms (
        chunk_id bigint PRIMARY KEY,
        terms text[] COLLATE "C" NOT NULL,
        words text[] COLLATE "C" NOT NULL
    )
    """,
    # The postings of each (collection, key) by ascending chunk id, cut into pieces of 4,096
    # (level 4, full) and a remainder of level floor(log8 size): blocks.py's layout as it was
    # written then, frozen here.
    *(
        f"""
        INSERT INTO {{schema}}.rag_{kind}_blocks
            (collection_id, {kind}, level, first_id, last_id, chunk_ids{arrays})
        SELECT collection_id, {kind},
               least(4, floor(ln(greatest(count(*), 1)) / ln(8) + 1e-9))::smallint,
               min(id), max(id), array_agg(id ORDER BY id){aggregates}
          FROM (SELECT collection_id, {kind}, chunk_id AS id{columns},
                       (row_number() OVER (PARTITION BY collection_id, {kind} ORDER BY chunk_id)
                        - 1) / 4096 AS piece
                  FROM {{schema}}.{old}) AS numbered
         GROUP BY collection_id, {kind}, piece
        """  # noqa: S608 (the f-string's parts are this tuple's constants, never input)
        for kind, old, arrays, aggregates, columns in (
            (
                "term",
                "rag_postings",
                ", tfs, dls",
                ", array_agg(tf ORDER BY id), array_agg(dl ORDER BY id)",
                ", tf, dl",
            ),
            ("word", "rag_words", "", "", ""),
        )
    ),
    """
    INSERT INTO {schema}.rag_chunk_terms (chunk_id, terms, words)
    SELECT c.id,
           coalesce((SELECT array_agg(term) FROM {schema}.rag_postings p
                      WHERE p.chunk_id = c.id), ARRAY[]::text[]),
           coalesce((SELECT array_agg(word) FROM {schema}.rag_words w
                      WHERE w.chunk_id = c.id), ARRAY[]::text[])
      FROM {schema}.rag_chunks c
    """,
    "DROP TABLE {schema}.rag_postings, {schema}.rag_words",
)
