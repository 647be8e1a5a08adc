"""Every migration of the store's schema, in order: a change to the tables appends one here."""

from __future__ import annotations

from rag_plugin.stores.postgres.migrations.migration import Migration
from rag_plugin.stores.postgres.migrations.near_entries import (
    DELETION_KEYS,
    LENGTH_COVERING,
    LONG_KEYS,
    SHARED_NEAR_KEYS,
    TRIGRAMS,
)
from rag_plugin.stores.postgres.migrations.postings import (
    BLOCKS,
    IMPACT_INDEX,
    IMPACT_ORDER,
    PROBE_COVERING,
    WORDS,
)
from rag_plugin.stores.postgres.migrations.tables import (
    CHUNK_FILTERS,
    INITIAL,
    KEYS_BY_ID,
    SIGNATURES,
    TEXT_BYTES,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "collections, documents, chunks, BM25 postings, vocabulary, cache", INITIAL),
    Migration(2, "postings by impact (term, tf, dl) for exact top-k BM25", IMPACT_INDEX),
    # Measured at 100k chunks: with Zipf-head query terms a term's impact threshold still
    # admits most of its postings and probing them all cost more than MaxScore's full read,
    # so BM25 went back to MaxScore and the index, which only slowed writes, goes.
    Migration(3, "drop the unused impact index", ("DROP INDEX {schema}.rag_postings_impact",)),
    Migration(4, "fuzzy word postings and word vocabulary, backfilled from the chunks", WORDS),
    Migration(5, "postings by impact (term, tf DESC, dl) for BM25 thresholds", IMPACT_ORDER),
    Migration(6, "chunk keys by row id, for ordering candidates without the rows", KEYS_BY_ID),
    Migration(7, "postings key covers tf and dl, so BM25 probes skip the table", PROBE_COVERING),
    Migration(8, "trigram indexes on both vocabularies, for near-word lookups", TRIGRAMS),
    Migration(9, "length indexes of both vocabularies cover the entries", LENGTH_COVERING),
    Migration(10, "postings in blocks per term and word, a forward index per chunk", BLOCKS),
    Migration(11, "deletion keys of both vocabularies, for near-entry lookups", DELETION_KEYS),
    Migration(12, "deletion keys of long entries' prefixes; no trigram indexes", LONG_KEYS),
    Migration(13, "chunk metadata for filters in a narrow table of its own", CHUNK_FILTERS),
    Migration(14, "binary signatures of the chunks' vectors in the filter table", SIGNATURES),
    Migration(15, "bytes of chunk text per collection, for usage limits", TEXT_BYTES),
    Migration(16, "one near-entry index for the schema's collections", SHARED_NEAR_KEYS),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
