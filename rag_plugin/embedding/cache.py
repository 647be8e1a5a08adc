"""Embedding caches keyed by (model, content hash), so unchanged text is never embedded twice."""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from rag_plugin.exceptions import StoreError

__all__ = [
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "ReadOnlyEmbeddingCache",
    "SqliteEmbeddingCache",
]


@runtime_checkable
class EmbeddingCache(Protocol):
    """Stores L2-normalised vectors by model name and :func:`content_hash_hex` of the text."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        ...

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        ...


class ReadOnlyEmbeddingCache:
    """Reads another cache and stores nothing: for a search that must write nothing (a
    retrieval playground), which still gets the vectors other searches cached."""

    def __init__(self, cache: EmbeddingCache) -> None:
        self.cache = cache

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the underlying cache's vectors among ``hashes`` for ``model``."""
        return self.cache.get_many(model, hashes)

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store nothing."""


class InMemoryEmbeddingCache:
    """A process-local cache in a dict, safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Tuples, so neither the caller's list nor a returned list can change a stored vector.
        self._vectors: dict[tuple[str, str], tuple[float, ...]] = {}

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        with self._lock:
            found = {h: self._vectors.get((model, h)) for h in hashes}
        return {h: list(vector) for h, vector in found.items() if vector is not None}

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        entries = {(model, h): tuple(float(x) for x in vector) for h, vector in vectors.items()}
        with self._lock:
            self._vectors.update(entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._vectors.clear()


class SqliteEmbeddingCache:
    """A cache in one SQLite file, shared by threads and processes (E7 without a database).

    Vectors are stored as little-endian float64, so a vector read back equals the one stored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One connection guarded by a lock; WAL lets other processes read while we write.
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embedding_cache ("
                " model TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, content_hash))"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"Cannot open the embedding cache {self.path}: {exc}.") from exc

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        found: dict[str, list[float]] = {}
        with self._lock:
            try:
                # json_each binds the whole list as one parameter: no SQL built from strings.
                rows = self._db.execute(
                    "SELECT content_hash, vector FROM embedding_cache"
                    " WHERE model = ? AND content_hash IN (SELECT value FROM json_each(?))",
                    (model, json.dumps(list(hashes))),
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"Cannot read the embedding cache {self.path}: {exc}.") from exc
        for digest, blob in rows:
            found[digest] = list(struct.unpack(f"<{len(blob) // 8}d", blob))
        return found

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        rows = [
            (model, digest, struct.pack(f"<{len(vector)}d", *vector))
            for digest, vector in vectors.items()
        ]
        with self._lock:
            try:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embedding_cache (model, content_hash, vector)"
                        " VALUES (?, ?, ?)",
                        rows,
                    )
            except sqlite3.Error as exc:
                raise StoreError(f"Cannot write the embedding cache {self.path}: {exc}.") from exc

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()
        return int(count)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()
