"""An embedding cache in PostgreSQL, shared by every process that uses the schema (SPEC E7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.postgres.connection import ConnectionSource, Database
from rag_plugin.stores.postgres.rows import Tables, packed_vectors
from rag_plugin.stores.postgres.schema import ensure_schema

__all__ = ["PostgresEmbeddingCache"]


class PostgresEmbeddingCache:
    """Vectors by (model, content hash) in ``<schema>.rag_embedding_cache``.

    Implements :class:`rag_plugin.embedding.EmbeddingCache`. Vectors are stored as pgvector
    ``vector`` (float32), the precision every store keeps them in anyway.
    """

    def __init__(
        self,
        conninfo_or_pool: ConnectionSource,
        schema: str = "public",
        *,
        create_schema: bool = True,
    ) -> None:
        self._db = Database(conninfo_or_pool, schema, max_size=2)
        self._tables = Tables(self._db.schema)
        if create_schema:
            with self._db.transaction() as conn:
                ensure_schema(conn, self._db.schema)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        if not hashes:
            return {}
        (rows,) = self._db.run(
            (
                self._tables(
                    "SELECT content_hash, embedding::real[] FROM {embedding_cache}"
                    " WHERE model = %s AND content_hash = ANY(%s)"
                ),
                (model, list(hashes)),
            )
        )
        return {digest: [float(x) for x in values] for digest, values in rows}

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        if not vectors:
            return
        hashes = sorted(vectors)  # one order for every writer, so concurrent puts never deadlock
        values, ends = packed_vectors([vectors[h] for h in hashes])
        dimensions = {len(vectors[h]) for h in hashes}
        if len(dimensions) != 1 or 0 in dimensions:
            raise InvalidInputError(
                f"The vectors of model {model!r} must all have one non-zero length, got "
                f"lengths {sorted(dimensions)}."
            )
        # One statement, atomic on its own: one round trip, no BEGIN/COMMIT. Not durable: an
        # entry a server crash loses is embedded again, and not waiting for the WAL flush
        # saves the ingest that fills the cache a disk sync (the document write has its own).
        self._db.run(
            (
                self._tables(
                    "INSERT INTO {embedding_cache} AS e (model, content_hash, embedding)"
                    " SELECT %(model)s, u.hash,"
                    " (%(values)b::float8[])[u.vector_end - %(dims)s + 1 : u.vector_end]::vector"
                    " FROM unnest(%(hashes)b::text[], %(ends)b::integer[]) AS u(hash, vector_end)"
                    " ON CONFLICT (model, content_hash) DO UPDATE"
                    " SET embedding = EXCLUDED.embedding, created_at = now()"
                ),
                {
                    "model": model,
                    "hashes": hashes,
                    "values": values,
                    "ends": ends,
                    "dims": dimensions.pop(),
                },
            ),
            durable=False,
        )

    def __len__(self) -> int:
        with self._db.transaction() as conn:
            row = conn.execute(self._tables("SELECT count(*) FROM {embedding_cache}")).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        """Close the pool this cache opened from a DSN (lent pools stay open)."""
        self._db.close()
