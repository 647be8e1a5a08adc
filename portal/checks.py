"""Start-up checks (``manage.py check``, run before every management command and runserver):
settings that cannot work are named before the first request."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error

from rag_plugin.exceptions import ConfigurationError


def rag_store_settings(**kwargs: Any) -> list[CheckMessage]:
    """``RAG_STORE`` and ``RAG_QDRANT_*``: a store the portal can build."""
    from portal.rag.runtime import check_store_settings

    try:
        check_store_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), id="portal.E001")]
    return []
