"""The store's schema history: every migration, in order, never edited once applied.

:func:`~rag_plugin.stores.postgres.schema.ensure_schema` runs, in one transaction, every
migration newer than the version a schema records. A change to the tables appends a
:class:`Migration` here, so existing data is migrated in place; the comments above each step
say why the tables look as they do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "Step"]


Step = str | Callable[[psycopg.Connection[Any], str], None]
"""A migration step: DDL/DML using ``{schema}``, or a function of (connection, schema)."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema's history, run in order inside ``ensure_schema``'s transaction.

    A step is SQL with ``{schema}`` for the schema, or a Python function called with the
    connection and the schema name (for data that only Python can compute, such as Python's
    own lowercasing and splitting of chunk texts).
    """

    version: int
    description: str
    statements: tuple[Step, ...]


# Why the layout looks like this:
# - One set of tables per schema (django-tenants gives each tenant one), shared by all its
#   collections, so a new per-user collection is one row, not new tables.
# - ``rag_chunks.embedding`` is an untyped ``vector``: collections differ in dimension. HNSW
#   needs a fixed dimension, so indexes are partial expression indexes per (dimension,
#   metric), created on demand (see ``ensure_vector_index``).
# - BM25 state is ``rag_postings`` (term → chunk, tf, and the chunk's length dl, copied so
#   scoring needs no join) plus ``rag_vocabulary`` (term → document frequency, which is both
#   BM25's df and the fuzzy vocabulary) plus N and Σdl on the collection row.
# - Keys and terms use the "C" collation, so SQL orders them exactly as Python orders str.
_INITIAL = (
    """
    CREATE TABLE {schema}.rag_collections (
        id bigserial PRIMARY KEY,
        name text COLLATE "C" NOT NULL,
        owner text COLLATE "C",
        dimensions integer NOT NULL CHECK (dimensions > 0),
        embedding_model text NOT NULL,
        metric text NOT NULL CHECK (metric IN ('cosine', 'l2', 'inner_product')),
        analyzer text NOT NULL,
        document_count integer NOT NULL DEFAULT 0,
        chunk_count bigint NOT NULL DEFAULT 0,
        token_count bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT rag_collections_name_owner UNIQUE NULLS NOT DISTINCT (name, owner)
    )
    """,
    """
    CREATE TABLE {schema}.rag_documents (
        id text COLLATE "C" PRIMARY KEY,
        collection_id bigint NOT NULL REFERENCES {schema}.rag_collections (id)
            ON DELETE CASCADE,
        source text NOT NULL,
        title text NOT NULL,
        tags text[] NOT NULL,
        metadata jsonb NOT NULL,
        content_hash text NOT NULL,
        created_at timestamptz NOT NULL,
        chunk_count integer NOT NULL,
        seq bigserial NOT NULL
    )
    """,
    """
    CREATE UNIQUE INDEX rag_documents_source ON {schema}.rag_documents (collection_id, source)
        WHERE source <> ''
    """,
    "CREATE INDEX rag_documents_newest ON {schema}.rag_documents (collection_id, seq DESC)",
    """
    CREATE TABLE {schema}.rag_chunks (
        id bigserial PRIMARY KEY,
        collection_id bigint NOT NULL,
        document_id text COLLATE "C" NOT NULL REFERENCES {schema}.rag_documents (id)
            ON DELETE CASCADE,
        idx integer NOT NULL,
        chunk_key text COLLATE "C" NOT NULL,
        content text NOT NULL,
        start_offset integer NOT NULL,
        end_offset integer NOT NULL,
        metadata jsonb NOT NULL,
        token_count integer NOT NULL,
        dimensions integer NOT NULL,
        metric text NOT NULL,
        embedding vector NOT NULL,
        UNIQUE (document_id, idx)
    )
    """,
    "CREATE INDEX rag_chunks_collection ON {schema}.rag_chunks (collection_id, chunk_key)",
    """
    CREATE INDEX rag_chunks_metadata ON {schema}.rag_chunks
        USING gin (metadata jsonb_path_ops)
    """,
    """
    CREATE TABLE {schema}.rag_postings (
        collection_id bigint NOT NULL,
        term text COLLATE "C" NOT NULL,
        chunk_id bigint NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        PRIMARY KEY (collection_id, term, chunk_id)
    )
    """,
    "CREATE INDEX rag_postings_chunk ON {schema}.rag_postings (chunk_id)",
    """
    CREATE TABLE {schema}.rag_vocabulary (
        collection_id bigint NOT NULL,
        term text COLLATE "C" NOT NULL,
        df integer NOT NULL,
        PRIMARY KEY (collection_id, term)
    )
    """,
    """
    CREATE INDEX rag_vocabulary_length ON {schema}.rag_vocabulary
        (collection_id, char_length(term))
    """,
    """
    CREATE TABLE {schema}.rag_embedding_cache (
        model text NOT NULL,
        content_hash text NOT NULL,
        embedding vector NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (model, content_hash)
    )
    """,
)

# Exact top-k BM25 reads a term's postings by impact, which rises with tf and falls with dl:
# one index range per (term, tf), ordered by dl, serves both "the k best" and "all above τ".
_IMPACT_INDEX = (
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
_WORDS = (
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
_IMPACT_ORDER = (
    """
    CREATE INDEX rag_postings_by_impact ON {schema}.rag_postings
        (collection_id, term, tf DESC, dl) INCLUDE (chunk_id)
    """,
)

# Ordering candidates by chunk id (the tie-break) needs only each chunk's key: this index hands
# it over by row id without reading the wide chunk rows (content, vector).
_KEYS_BY_ID = ("CREATE INDEX rag_chunks_key_by_id ON {schema}.rag_chunks (id) INCLUDE (chunk_key)",)

# BM25 probes a candidate chunk's query terms by (term, chunk): with tf and dl in the primary key's
# index the probe never reads the table. Built first, then swapped in as the key.
_PROBE_COVERING = (
    """
    CREATE UNIQUE INDEX rag_postings_key_covering ON {schema}.rag_postings
        (collection_id, term, chunk_id) INCLUDE (tf, dl)
    """,
    """
    ALTER TABLE {schema}.rag_postings DROP CONSTRAINT rag_postings_pkey,
        ADD CONSTRAINT rag_postings_pkey PRIMARY KEY USING INDEX rag_postings_key_covering
    """,
)


# Typo correction and the fuzzy leg looked up the vocabulary entries that contain one piece of
# a query word through trigram indexes (pg_trgm) until migration 12 replaced them by deletion
# keys and dropped them. Nothing after migration 11 reads them, and every migration runs in
# one transaction up to the latest, so on a database without pg_trgm this step builds nothing:
# the store needs no extension but ``vector``.
def _trigram_indexes(conn: psycopg.Connection[Any], schema: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").fetchone() is None:
        return
    for table, column in (("rag_vocabulary", "term"), ("rag_word_vocabulary", "word")):
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {} USING gin ({} gin_trgm_ops)").format(
                sql.Identifier(f"{table}_trigrams"),
                sql.Identifier(schema, table),
                sql.Identifier(column),
            )
        )


_TRIGRAMS: tuple[Step, ...] = (_trigram_indexes,)

# A short query word's near entries are found by reading its whole length window and checking
# each entry's distance in Python (correction.near_terms): with the entries in the length index
# that read touches no table rows. The df stays out of the index, so df updates stay HOT.
_LENGTH_COVERING = tuple(
    statement
    for table, column in (("rag_vocabulary", "term"), ("rag_word_vocabulary", "word"))
    for statement in (
        f"DROP INDEX {{schema}}.{table}_length",
        f"""
        CREATE INDEX {table}_length ON {{schema}}.{table}
            (collection_id, char_length({column})) INCLUDE ({column})
        """,
    )
)

# Postings as arrays, a few rows per key (blocks.py): a long query reads its terms' and close
# words' every posting in one round trip instead of row by row. The blocks and the forward
# index are built from the old tables of one row per posting, which then go with their
# indexes (the chunk index of rag_words served the fuzzy leg's probes: the forward index
# does that now).
_BLOCKS: tuple[Step, ...] = (
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


# The deletion keys of both vocabularies' entries of at most ten characters (migration 11)
# and of the longer ones (12): near.py's keys as they were then, frozen here, so these
# migrations do not change when near.py does (the keys of a long entry are those of its
# first ten characters).
_FROZEN_ENTRY_KEYS = """
    INSERT INTO {deletes} (collection_id, key, entry)
    SELECT v.collection_id, k.key, v.{column} FROM {vocabulary} v
    CROSS JOIN LATERAL (
        SELECT left(v.{column}, 10) AS key
        UNION SELECT overlay(left(v.{column}, 10) placing '' from i for 1)
          FROM generate_series(1, char_length(left(v.{column}, 10))) AS i
        UNION SELECT overlay(overlay(left(v.{column}, 10) placing '' from j for 1)
          placing '' from i for 1)
          FROM generate_series(1, char_length(left(v.{column}, 10))) AS i,
          generate_series(i + 1, char_length(left(v.{column}, 10))) AS j
    ) AS k
    WHERE char_length(v.{column}) {comparison} 10
"""


def _entry_keys(comparison: str) -> Step:
    """The step that keys both vocabularies' entries whose length is ``comparison`` ten."""

    def backfill(conn: psycopg.Connection[Any], schema: str) -> None:
        for kind, vocabulary, column in (
            ("term", "vocabulary", "term"),
            ("word", "word_vocabulary", "word"),
        ):
            conn.execute(
                sql.SQL(_FROZEN_ENTRY_KEYS).format(
                    deletes=sql.Identifier(schema, f"rag_{kind}_deletes"),
                    vocabulary=sql.Identifier(schema, f"rag_{vocabulary}"),
                    column=sql.Identifier(column),
                    comparison=sql.SQL(comparison),
                )
            )

    return backfill


# The near-entry index of both vocabularies (near.py): a short query word's close entries from
# its deletion keys instead of its whole length window.
_DELETION_KEYS: tuple[Step, ...] = (
    *(
        f"""
        CREATE TABLE {{schema}}.rag_{kind}_deletes (
            collection_id bigint NOT NULL,
            key text COLLATE "C" NOT NULL,
            entry text COLLATE "C" NOT NULL,
            PRIMARY KEY (collection_id, key, entry)
        )
        """
        for kind in ("term", "word")
    ),
    _entry_keys("<="),
)

# Every entry in the near-entry index, a long one under the keys of its first ten characters
# (near.py): a long query word's close entries by the same key lookups as a short one's,
# instead of its partition pieces through the trigram indexes, which go (at 100k chunks they
# fetched ≈ 3.8k entries a query to keep a few, 14 ms of the slowest fuzzy queries).
_LONG_KEYS: tuple[Step, ...] = (
    _entry_keys(">"),
    "DROP INDEX IF EXISTS {schema}.rag_vocabulary_trigrams, {schema}.rag_word_vocabulary_trigrams",
)

# A metadata filter reads the matching chunks' ids from a narrow table of its own, each chunk's
# metadata beside its id (≈ 100 bytes a row), instead of from the chunk rows (≈ 2 kB: text and
# vector), which the GIN index on rag_chunks.metadata sent every filter to: at 100k chunks a
# filter matching 10 % visited 8,076 heap pages of rag_chunks, 12–24 ms per leg and leg, and
# visits ≈ 1.4k of this table's. Rows are copied by collection, so a collection's are together.
# rag_chunks keeps its own metadata (results and the HNSW plan's per-row check read it there);
# both are written by the same statement (writes.py), so they never differ.
_CHUNK_FILTERS: tuple[Step, ...] = (
    """
    CREATE TABLE {schema}.rag_chunk_filters (
        chunk_id bigint PRIMARY KEY,
        collection_id bigint NOT NULL,
        metadata jsonb NOT NULL
    )
    """,
    """
    INSERT INTO {schema}.rag_chunk_filters (chunk_id, collection_id, metadata)
    SELECT id, collection_id, metadata FROM {schema}.rag_chunks ORDER BY collection_id, id
    """,
    """
    CREATE INDEX rag_chunk_filters_metadata ON {schema}.rag_chunk_filters
        USING gin (metadata jsonb_path_ops)
    """,
    "DROP INDEX {schema}.rag_chunks_metadata",
)

# Each chunk's binary signature (pgvector's binary_quantize: one bit a dimension, its sign)
# beside its metadata: a filtered dense search ranks the filter's matches by Hamming distance
# over this narrow table and only the best ones exactly, by their vectors (dense.py). At 100k
# chunks, ranking a 10 % filter's 9,869 matches exactly cost ≈ 28 ms, the whole filtered leg.
# The table is rebuilt rather than updated in place (an UPDATE would leave a dead copy of
# every row behind until a VACUUM).
_SIGNATURES: tuple[Step, ...] = (
    """
    CREATE TABLE {schema}.rag_chunk_filters_new (
        chunk_id bigint PRIMARY KEY,
        collection_id bigint NOT NULL,
        metadata jsonb NOT NULL,
        signature varbit NOT NULL
    )
    """,
    """
    INSERT INTO {schema}.rag_chunk_filters_new (chunk_id, collection_id, metadata, signature)
    SELECT f.chunk_id, f.collection_id, f.metadata, binary_quantize(c.embedding)
    FROM {schema}.rag_chunk_filters f JOIN {schema}.rag_chunks c ON c.id = f.chunk_id
    ORDER BY f.collection_id, f.chunk_id
    """,
    "DROP TABLE {schema}.rag_chunk_filters",
    "ALTER TABLE {schema}.rag_chunk_filters_new RENAME TO rag_chunk_filters",
    "ALTER INDEX {schema}.rag_chunk_filters_new_pkey RENAME TO rag_chunk_filters_pkey",
    """
    CREATE INDEX rag_chunk_filters_metadata ON {schema}.rag_chunk_filters
        USING gin (metadata jsonb_path_ops)
    """,
)

# Bytes of chunk text per collection, beside its document and chunk counts, kept by every
# write: an owner's usage, which quotas limit (SPEC O7), is then a sum over its few
# collection rows, never a scan of its chunks.
_TEXT_BYTES: tuple[Step, ...] = (
    "ALTER TABLE {schema}.rag_collections ADD COLUMN text_bytes bigint NOT NULL DEFAULT 0",
    """
    UPDATE {schema}.rag_collections k SET text_bytes = s.bytes
    FROM (
        SELECT collection_id, sum(octet_length(content)) AS bytes
        FROM {schema}.rag_chunks GROUP BY collection_id
    ) s
    WHERE s.collection_id = k.id
    """,
)

# One near-entry index for the schema instead of one per collection and vocabulary (near.py):
# an entry's keys depend on its text alone, so a collection whose words the schema knows
# writes none. A fresh collection of 97 SciFact chunks wrote 233k key rows, 4.3 of its 4.8 s
# of store write; every user's private collection wrote them again.
_SHARED_NEAR_KEYS: tuple[Step, ...] = (
    """
    CREATE TABLE {schema}.rag_near_keys (
        key text COLLATE "C" NOT NULL,
        entry text COLLATE "C" NOT NULL,
        PRIMARY KEY (key, entry)
    )
    """,
    """
    INSERT INTO {schema}.rag_near_keys (key, entry)
    SELECT key, entry FROM {schema}.rag_term_deletes
    UNION SELECT key, entry FROM {schema}.rag_word_deletes
    """,
    "DROP TABLE {schema}.rag_term_deletes, {schema}.rag_word_deletes",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "collections, documents, chunks, BM25 postings, vocabulary, cache", _INITIAL),
    Migration(2, "postings by impact (term, tf, dl) for exact top-k BM25", _IMPACT_INDEX),
    # Measured at 100k chunks: with Zipf-head query terms a term's impact threshold still
    # admits most of its postings and probing them all cost more than MaxScore's full read,
    # so BM25 went back to MaxScore and the index, which only slowed writes, goes.
    Migration(3, "drop the unused impact index", ("DROP INDEX {schema}.rag_postings_impact",)),
    Migration(4, "fuzzy word postings and word vocabulary, backfilled from the chunks", _WORDS),
    Migration(5, "postings by impact (term, tf DESC, dl) for BM25 thresholds", _IMPACT_ORDER),
    Migration(6, "chunk keys by row id, for ordering candidates without the rows", _KEYS_BY_ID),
    Migration(7, "postings key covers tf and dl, so BM25 probes skip the table", _PROBE_COVERING),
    Migration(8, "trigram indexes on both vocabularies, for near-word lookups", _TRIGRAMS),
    Migration(9, "length indexes of both vocabularies cover the entries", _LENGTH_COVERING),
    Migration(10, "postings in blocks per term and word, a forward index per chunk", _BLOCKS),
    Migration(11, "deletion keys of both vocabularies, for near-entry lookups", _DELETION_KEYS),
    Migration(12, "deletion keys of long entries' prefixes; no trigram indexes", _LONG_KEYS),
    Migration(13, "chunk metadata for filters in a narrow table of its own", _CHUNK_FILTERS),
    Migration(14, "binary signatures of the chunks' vectors in the filter table", _SIGNATURES),
    Migration(15, "bytes of chunk text per collection, for usage limits", _TEXT_BYTES),
    Migration(16, "one near-entry index for the schema's collections", _SHARED_NEAR_KEYS),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
