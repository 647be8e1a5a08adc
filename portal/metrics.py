"""Prometheus metrics (issue 34): ``GET /metrics`` in the text format, for the operator.

Every process of a deployment counts into one directory (``PROMETHEUS_MULTIPROC_DIR``,
prometheus-client's multiprocess mode): each gunicorn worker and each ingestion worker, so a
scrape of any of them sees the whole deployment on that machine. Without the directory (a
single process such as ``runserver``) the process's own registry is served.

``/metrics`` is never public by default: it answers only a request carrying
``Authorization: Bearer <RAG_METRICS_TOKEN>`` or coming from an address in
``RAG_METRICS_ADDRESSES`` (CIDRs); anything else is 403. It is answered by
:class:`MetricsMiddleware` before the tenant lookup, on any host, and costs no database work
except the queue's depth (one grouped count of procrastinate's jobs).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Callable, Iterator, Sequence

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from portal.api.errors import json_error
from portal.rag.errors import database_unavailable
from portal.rag.metrics import LATENCY_BUCKETS
from portal.rag.runtime import pool_stats_counted

PATH = "/metrics"

HTTP_REQUESTS = Counter(
    "rag_http_requests",
    "HTTP requests answered, by method, route (the URL pattern) and status.",
    ["method", "route", "status"],
)
HTTP_LATENCY = Histogram(
    "rag_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of the view; a stream's body is not timed).",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)


class QueueCollector(Collector):
    """The ingestion queue's depth at scrape time: procrastinate's jobs by status."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # registering it must not query the database

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "rag_queue_jobs",
            "Jobs in the ingestion queue by status (todo: waiting; doing: being run).",
            labels=["status"],
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT status, count(*) FROM public.procrastinate_jobs"
                    " WHERE status IN ('todo', 'doing') GROUP BY status"
                )
                counts = dict(cursor.fetchall())
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            return  # no queue gauge while the database is away; the rest is served
        for status in ("todo", "doing"):
            family.add_metric([status], float(counts.get(status, 0)))
        yield family


_QUEUE = QueueCollector()
REGISTRY.register(_QUEUE)


def _registry() -> CollectorRegistry:
    """Every process's metrics from the shared directory, else this process's own."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    registry.register(_QUEUE)
    return registry


def allowed(request: HttpRequest) -> bool:
    """Whether the request may read the metrics: the token, or an allowed address."""
    config = settings.RAG_METRICS
    token = str(config["TOKEN"])
    sent = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    networks: Sequence[str] = config["ADDRESSES"]
    return any(address in ipaddress.ip_network(net) for net in networks)


def metrics_response(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return json_error("Only GET reads the metrics.", "METHOD_NOT_ALLOWED", 405)
    if not allowed(request):
        return json_error(
            "The metrics are for the operator: send Authorization: Bearer <RAG_METRICS_TOKEN>, "
            "or scrape from an address in RAG_METRICS_ADDRESSES.",
            "FORBIDDEN",
            403,
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


class MetricsMiddleware:
    """Answer ``/metrics``; count and time every other request by its route.

    It runs first, so a request refused by a later middleware (oversized, bad URL) is counted
    too; the route is the URL pattern the request resolved to (bounded: no ids), or
    ``unmatched``.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == PATH:
            return metrics_response(request)
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else "unmatched"
        method = request.method if request.method in _METHODS else "OTHER"
        HTTP_LATENCY.labels(method, route).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(method, route, str(response.status_code)).inc()
        pool_stats_counted()
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
