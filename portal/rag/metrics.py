"""What the RAG services count for the operator (issue 34; served by :mod:`portal.metrics`):
searches by strategy, ingestion jobs by kind and end state, LLM calls.

prometheus-client metrics, module-level so every process defines them once; in a deployment
they count into ``PROMETHEUS_MULTIPROC_DIR`` (see :mod:`portal.metrics`).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Request latencies: 5 ms (a cached health check) to 60 s (an ingest waiting on the model).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

SEARCH_LATENCY = Histogram(
    "rag_search_duration_seconds",
    "One collection's search, its legs and fusion included, by strategy.",
    ["strategy"],
    buckets=LATENCY_BUCKETS,
)
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
