"""Process-wide RAG resources: one connection pool, a store per tenant schema, the embedder.

The store and the embedding cache use their own psycopg pool (not Django's connection) because
an ingest is one store transaction of its own; the pool is built from Django's database settings
so both always talk to the same database (the test database under pytest). With
``RAG_STORE=qdrant`` the RAG data lives in Qdrant instead, embedding cache included, one
namespace per tenant schema.
"""

from __future__ import annotations

import atexit
import os
import ssl
import threading
from functools import cache
from typing import Any

import httpx
import psycopg
from django.conf import settings
from django.db import connection
from llama_index.core.llms import LLM
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from portal.rag.metrics import count_embedding, count_pool
from rag_plugin.embedding import Embedder, FastEmbedEmbedder
from rag_plugin.embedding.cache import EmbeddingCache, ReadOnlyEmbeddingCache
from rag_plugin.exceptions import ConfigurationError
from rag_plugin.stores.base import Store
from rag_plugin.stores.postgres import PostgresStore, ReplicaSet
from rag_plugin.stores.postgres.connection import check_pooled_connection

STORES = ("postgres", "qdrant")

# Per tenant schema, for the life of the process.
_stores: dict[str, Store] = {}
_caches: dict[str, EmbeddingCache] = {}
# The fastembed model each configured name resolved to (see _fastembed_model).
_models: dict[str, str] = {}


def _rag() -> dict[str, Any]:
    """The ``RAG`` settings block (see portal/settings.py for every key and its default)."""
    block: dict[str, Any] = settings.RAG
    return block


_ensure_lock = threading.Lock()


def _conninfo() -> str:
    db = connection.settings_dict
    params: dict[str, Any] = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
        **db.get("OPTIONS", {}),
    }
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


# How long a request waits for a pooled connection before PoolTimeout (503
# DATABASE_UNAVAILABLE): a busy pool frees one in milliseconds, a database that is down
# does not, and the client had better hear so than hang.
POOL_TIMEOUT_S = 10.0
# How long one background attempt to replace a lost connection keeps trying (its waits
# double from 1 s); when it gives up, the next request that needs a connection starts a new
# one at once. psycopg_pool's default (5 min) lets the waits grow to minutes, so a database
# back after a long outage would go unused for as long.
POOL_RECONNECT_S = 5.0


def pool_stats_counted() -> None:
    """Hand what the pool did since the last call to the metrics (an app process calls it after
    each request); nothing before the pool is first used."""
    if pool.cache_info().currsize:
        count_pool(pool().pop_stats())


@cache
def pool() -> ConnectionPool[Any]:
    """The process's pool of connections for stores and embedding caches.

    Each connection is checked (one empty round trip) as it leaves the pool: one the server
    dropped while it sat idle (a crash-restart, a failover, an idle timeout) is then replaced,
    with every other idle one, instead of failing the request it was given to, however long
    after.
    """
    size = int(_rag()["POOL_MAX_SIZE"])

    def check(conn: psycopg.Connection[Any]) -> None:
        check_pooled_connection(created, conn)

    created: ConnectionPool[Any] = ConnectionPool(
        _conninfo(),
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True},
        check=check,
        timeout=POOL_TIMEOUT_S,
        reconnect_timeout=POOL_RECONNECT_S,
        open=True,
        name="portal-rag",
    )
    return created


def store_backend() -> str:
    """``RAG_STORE``, checked: ``postgres`` or ``qdrant``."""
    backend = str(_rag()["STORE"])
    if backend not in STORES:
        raise ConfigurationError(f"Unknown RAG_STORE: {backend!r}. Use: {', '.join(STORES)}.")
    return backend


def store_for(schema_name: str) -> Store:
    """The RAG store of one tenant schema (its namespace of :func:`backend_store`), made once
    per process (its tables created or migrated then), so the SQL it composes once serves
    every request."""
    store = _stores.get(schema_name)
    if store is None:
        with _ensure_lock:
            store = _stores.get(schema_name)
            if store is None:
                store = _stores[schema_name] = backend_store().for_namespace(schema_name)
    return store


def replicas_configured() -> bool:
    """Whether ``DATABASE_REPLICA_URLS`` names standbys to read on."""
    return bool(_rag()["REPLICAS"]["URLS"]) and store_backend() == "postgres"


@cache
def replica_set() -> ReplicaSet | None:
    """The process's standbys (``DATABASE_REPLICA_URLS``), checked in the background, shared
    by every tenant's store; None without any."""
    if not replicas_configured():
        return None
    config = _rag()["REPLICAS"]
    created = ReplicaSet(
        pool(),
        config["URLS"],
        max_lag_s=config["MAX_LAG_S"],
        wait_s=config["WAIT_S"],
        check_every_s=config["CHECK_EVERY_S"],
        pool_max_size=int(_rag()["POOL_MAX_SIZE"]),
    )
    atexit.register(created.close)
    return created


def check_store_settings() -> None:
    """Raise ``ConfigurationError`` naming the setting if ``RAG_STORE`` and, for Qdrant,
    ``RAG_QDRANT_*`` cannot work; reaches no server (the start-up check calls it)."""
    if store_backend() != "qdrant":
        return
    config = _rag()["QDRANT"]
    if bool(config["URL"]) == bool(config["PATH"]):
        raise ConfigurationError(
            "RAG_STORE=qdrant needs exactly one of RAG_QDRANT_URL (a Qdrant server) and "
            "RAG_QDRANT_PATH (a folder, or :memory:, for Qdrant in this process)."
        )
    variable = config["API_KEY_ENV"]
    if variable and not os.environ.get(variable):
        raise ConfigurationError(
            f"RAG_QDRANT_API_KEY_ENV names the variable {variable}, which is not set."
        )
    try:
        import qdrant_client  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            'RAG_STORE=qdrant needs qdrant-client: pip install "rag-plugin[qdrant]".'
        ) from exc


@cache
def backend_store() -> Store:
    """The process's store, built from ``RAG_STORE`` and its settings: the only place the
    portal names a store class (each tenant's is :meth:`~Store.for_namespace` of it; a bad
    setting raises ``ConfigurationError`` naming it)."""
    check_store_settings()
    store: Store
    if store_backend() == "postgres":
        # The tenants' stores share its pool and standbys; it serves no schema itself.
        store = PostgresStore(
            pool(), schema="public", create_schema=False, replicas=replica_set(), **_rag()["HNSW"]
        )
    else:
        store = _qdrant()
    # Closed before the interpreter tears down the modules its finaliser would need.
    atexit.register(store.close)
    return store


def _qdrant() -> Store:
    """A Qdrant store from ``RAG_QDRANT_*`` (checked by :func:`check_store_settings`)."""
    from rag_plugin.stores.qdrant import QdrantStore

    config = _rag()["QDRANT"]
    url, path = config["URL"], config["PATH"]
    try:
        if url:
            return QdrantStore(
                url,
                api_key_env=config["API_KEY_ENV"] or None,
                prefer_grpc=bool(config["PREFER_GRPC"]),
                prefix=config["PREFIX"],
            )
        if path == ":memory:":
            return QdrantStore(location=path, prefix=config["PREFIX"])
        return QdrantStore(path=path, prefix=config["PREFIX"])
    except ConfigurationError as exc:
        raise ConfigurationError(f"RAG_QDRANT_* settings: {exc}") from exc


def drop_tenant_data(schema_name: str) -> None:
    """Delete what the store keeps for a deleted tenant: Qdrant's namespace; a PostgreSQL
    store's tables, if django-tenants has not dropped the schema with them already."""
    backend_store().drop_namespace(schema_name)
    _stores.pop(schema_name, None)
    _caches.pop(schema_name, None)


def _embedding_cache(schema_name: str) -> EmbeddingCache:
    """The tenant's embedding cache, beside its RAG data (in its schema, or in Qdrant)."""
    found = _caches.get(schema_name)
    if found is None:
        cache = store_for(schema_name).embedding_cache()
        if cache is None:  # pragma: no cover - both backends keep one
            raise ConfigurationError(f"RAG_STORE={store_backend()} keeps no embedding cache.")
        found = _caches.setdefault(schema_name, cache)
    return found


def embedder_for(schema_name: str, *, read_only: bool = False) -> Embedder:
    """The deployment's embedder, with the tenant's persistent embedding cache (E7).

    A new embedder per call (its stats count one request's work); the cache is shared.
    ``read_only``: the cache is read but never written (a search that must write nothing).
    """
    embedding_cache = _embedding_cache(schema_name)
    if read_only:
        embedding_cache = ReadOnlyEmbeddingCache(embedding_cache)
    embedder = _new_embedder(embedding_cache)
    embedder.on_count = count_embedding  # texts embedded and cache hits, for /metrics
    return embedder


def _new_embedder(embedding_cache: EmbeddingCache) -> Embedder:
    backend = _rag()["EMBEDDER"]
    if backend == "fastembed":
        model = _fastembed_model(_rag()["EMBEDDING_MODEL"])
        return FastEmbedEmbedder(
            model, fallback_model=None, cache=embedding_cache, threads=_embedding_threads()
        )
    if backend == "fake":
        from rag_plugin.testing import FakeEmbedder

        return FakeEmbedder(int(_rag()["FAKE_DIMENSIONS"]), cache=embedding_cache)
    if backend == "http":
        from rag_plugin.embedding.http import HttpEmbedder

        return HttpEmbedder(
            _rag()["EMBEDDING_URL"], _rag()["EMBEDDING_MODEL"], cache=embedding_cache
        )
    raise ConfigurationError(
        f"Unknown RAG_EMBEDDER: {backend}. Use: fastembed, http, fake (fake is for tests)."
    )


def warm_embedder() -> None:
    """Load the deployment's embedding model now and run it at its largest input shape (a
    worker does, before its first job): see :meth:`FastEmbedEmbedder.warm_up`."""
    if _rag()["EMBEDDER"] == "fastembed":
        model = _fastembed_model(_rag()["EMBEDDING_MODEL"])
        FastEmbedEmbedder(model, fallback_model=None, threads=_embedding_threads()).warm_up()


def _embedding_threads() -> int | None:
    """RAG_EMBEDDING_THREADS, or None for the model's default (a thread per core)."""
    return int(_rag()["EMBEDDING_THREADS"]) or None


def _fastembed_model(configured: str) -> str:
    """The model fastembed embedders load: the configured one (default: the library's), or
    the bundled fallback when it is not available offline, decided once per process.

    A new embedder would otherwise retry the unavailable model, and log that it falls back,
    on every request (~7 ms each, measured in the ingest bench). The model is loaded with the
    deployment's threads, so the embedders use this very load (with ``RAG_EMBEDDING_THREADS``
    set, a worker loaded a second, unused copy: ~100 MB and a second or two at start).
    """
    resolved = _models.get(configured)
    if resolved is None:
        probe = FastEmbedEmbedder(configured or None, threads=_embedding_threads())
        resolved = _models.setdefault(configured, probe.model_name)
    return resolved


@cache
def _tls() -> ssl.SSLContext:
    """The certificate store loaded once: loading it takes ≈ 20 ms, a client with it ≈ 1 ms."""
    return httpx.create_ssl_context()


def llm_http_client() -> httpx.Client:
    """Connections of their own for one LLM call, to close when it must end early."""
    return httpx.Client(verify=_tls())


@cache
def _shared_http_client() -> httpx.Client:
    """The process's pool of LLM connections for calls that run to their end (httpx clients
    are thread-safe). Without one, every request's new LLM built an HTTP client of its own,
    loading the certificate store again (≈ 20 ms a request) and opening a new connection."""
    return llm_http_client()


def llm_configured() -> bool:
    """Whether the deployment names an answering LLM (:func:`llm` builds it)."""
    rag = _rag()
    return bool(rag["LLM_URL"] and rag["LLM_MODEL"])


def llm(http_client: httpx.Client | None = None) -> LLM | None:
    """The deployment's answering LLM, or None when none is configured (SPEC R5).

    ``http_client``: the connections it uses, for a caller that must be able to end a request
    in flight (closing the client ends a streamed answer whose reader went away); by default
    the process's shared pool.
    """
    if not llm_configured():
        return None
    rag = _rag()
    from rag_plugin.llama_index.query_engine import openai_compatible_llm

    return openai_compatible_llm(
        rag["LLM_URL"],
        rag["LLM_MODEL"],
        api_key=rag["LLM_API_KEY"] or None,
        timeout=float(rag["LLM_TIMEOUT_SECONDS"]),
        max_retries=0,
        http_client=http_client or _shared_http_client(),
    )
