"""What the RAG services count for the operator (issue 34; served by :mod:`portal.metrics`):
searches by strategy and their legs, embedding work, ingestion jobs by kind and end state, LLM
calls, and the RAG store's connection pool.

prometheus-client metrics, module-level so every process defines them once; in a deployment
they count into ``PROMETHEUS_MULTIPROC_DIR`` (see :mod:`portal.metrics`).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from rag_plugin.search import SearchStrategy

# Request latencies: 5 ms (a cached health check) to 60 s (an ingest waiting on the model).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

SEARCH_LATENCY = Histogram(
    "rag_search_duration_seconds",
    "One collection's search, its legs and fusion included, by strategy.",
    ["strategy"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_LEG_LATENCY = Histogram(
    "rag_search_leg_duration_seconds",
    "One leg of a search (dense: with the query's embedding), by leg.",
    ["leg"],
    buckets=LATENCY_BUCKETS,
)
EMBEDDED_TEXTS = Counter(
    "rag_embedding_texts",
    "Texts the embedder was asked for, by where their vector came from: the model (embedded) "
    "or the embedding cache (cache_hit). rate() of embedded is chunks per second.",
    ["source"],
)
POOL_USAGE = Counter(
    "rag_pool_usage_seconds",
    "Seconds the RAG store's pooled connections were lent out, summed over connections: "
    "rate() is the mean number in use.",
)
POOL_WAIT = Counter(
    "rag_pool_wait_seconds",
    "Seconds requests waited for a pooled connection: rate() above 0 means the pool is short.",
)
POOL_QUEUED = Counter(
    "rag_pool_queued_requests",
    "Requests that found no free pooled connection and had to wait.",
)
POOL_SIZE = Gauge(
    "rag_pool_connections",
    "Connections the RAG store's pools hold, summed over live app processes.",
    multiprocess_mode="livesum",
)


def time_leg(leg: SearchStrategy, seconds: float) -> None:
    """A :class:`~rag_plugin.engine.CollectionSearcher` leg timer."""
    SEARCH_LEG_LATENCY.labels(str(leg)).observe(seconds)


def count_embedding(increments: dict[str, int]) -> None:
    """An :attr:`Embedder.on_count <rag_plugin.embedding.base.Embedder.on_count>` hook."""
    if increments.get("texts_embedded"):
        EMBEDDED_TEXTS.labels("embedded").inc(increments["texts_embedded"])
    if increments.get("cache_hits"):
        EMBEDDED_TEXTS.labels("cache_hit").inc(increments["cache_hits"])


def count_pool(stats: dict[str, int]) -> None:
    """Add what a pool did since its stats were last popped (``ConnectionPool.pop_stats``)."""
    POOL_USAGE.inc(stats.get("usage_ms", 0) / 1000)
    POOL_WAIT.inc(stats.get("requests_wait_ms", 0) / 1000)
    POOL_QUEUED.inc(stats.get("requests_queued", 0))
    POOL_SIZE.set(stats.get("pool_size", 0))


JOBS_ENDED = Counter(
    "rag_jobs_ended",
    "Ingestion job runs that ended, by kind and state (succeeded, failed, cancelled).",
    ["kind", "state"],
)
JOB_DURATION = Histogram(
    "rag_job_duration_seconds",
    "An ingestion job's run, from its start to its end, by kind.",
    ["kind"],
    buckets=(0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0),
)
LLM_CALLS = Counter(
    "rag_llm_calls",
    "Calls to the LLM (answer, chat, question condensing), by outcome: ok or error.",
    ["outcome"],
)
LLM_LATENCY = Histogram(
    "rag_llm_call_duration_seconds",
    "Time of one LLM call that returns a whole answer (a stream's first token is not timed).",
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0),
)
