"""The frozen steps of the tables themselves: the first layout, then the chunk and collection
tables' later columns, indexes and narrow copies (migrations 1, 6, 13, 14 and 15)."""

from __future__ import annotations

from rag_plugin.stores.postgres.migrations.migration import Step

__all__ = ["CHUNK_FILTERS", "INITIAL", "KEYS_BY_ID", "SIGNATURES", "TEXT_BYTES"]


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
INITIAL = (
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

# Ordering candidates by chunk id (the tie-break) needs only each chunk's key: this index hands
# it over by row id without reading the wide chunk rows (content, vector).
KEYS_BY_ID = ("CREATE INDEX rag_chunks_key_by_id ON {schema}.rag_chunks (id) INCLUDE (chunk_key)",)

# A metadata filter reads the matching chunks' ids from a narrow table of its own, each chunk's
# metadata beside its id (≈ 100 bytes a row), instead of from the chunk rows (≈ 2 kB: text and
# vector), which the GIN index on rag_chunks.metadata sent every filter to: at 100k chunks a
# filter matching 10 % visited 8,076 heap pages of rag_chunks, 12–24 ms per leg and leg, and
# visits ≈ 1.4k of this table's. Rows are copied by collection, so a collection's are together.
# rag_chunks keeps its own metadata (results and the HNSW plan's per-row check read it there);
# both are written by the same statement (writes.py), so they never differ.
CHUNK_FILTERS: tuple[Step, ...] = (
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
SIGNATURES: tuple[Step, ...] = (
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
TEXT_BYTES: tuple[Step, ...] = (
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
