"""Start-up checks (``manage.py check``, run before every management command and runserver):
settings that cannot work are named before the first request."""

from __future__ import annotations

from typing import Any

import psycopg
from django.conf import settings
from django.core.checks import CheckMessage, Error
from psycopg.conninfo import conninfo_to_dict

from rag_plugin.exceptions import ConfigurationError


def rag_store_settings(**kwargs: Any) -> list[CheckMessage]:
    """``RAG_STORE`` and ``RAG_QDRANT_*``: a store the portal can build."""
    from portal.rag.runtime import check_store_settings

    try:
        check_store_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), id="portal.E001")]
    return []


def embedding_settings(**kwargs: Any) -> list[CheckMessage]:
    """``RAG_EMBEDDING_THREADS``: a thread count the model can use."""
    rag: dict[str, Any] = settings.RAG
    if rag["EMBEDDING_THREADS"] < 0:
        return [
            Error(
                "RAG_EMBEDDING_THREADS must be 0 (a thread per core) or a positive number.",
                id="portal.E005",
            )
        ]
    return []


def replica_settings(**kwargs: Any) -> list[CheckMessage]:
    """``DATABASE_REPLICA_URLS`` and ``RAG_REPLICA_*``: standbys the portal can read on."""
    rag: dict[str, Any] = settings.RAG
    config: dict[str, Any] = rag["REPLICAS"]
    errors: list[CheckMessage] = []
    for position, url in enumerate(config["URLS"], start=1):
        try:
            conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            errors.append(
                Error(
                    f"DATABASE_REPLICA_URLS: entry {position} is not a libpq URL or DSN ({exc}).",
                    id="portal.E002",
                )
            )
    for name in ("MAX_LAG_S", "CHECK_EVERY_S"):
        if not config[name] > 0:
            errors.append(
                Error(f"RAG_REPLICA_{name} must be a positive number of seconds.", id="portal.E003")
            )
    if config["WAIT_S"] < 0:
        errors.append(Error("RAG_REPLICA_WAIT_S must not be negative.", id="portal.E003"))
    if config["URLS"] and rag["STORE"] != "postgres":
        errors.append(
            Error(
                "DATABASE_REPLICA_URLS is for RAG_STORE=postgres; Qdrant replicates itself.",
                id="portal.E004",
            )
        )
    return errors
