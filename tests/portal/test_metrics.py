"""``GET /metrics`` (issue 34): the operator's only, in the Prometheus text format, and every
process counted: the session's gunicorn server (two workers) and an ingestion worker count
into one folder, and a scrape parsed by prometheus-client's own parser sees the numbers move.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
import pytest
from django.test import RequestFactory, override_settings
from prometheus_client.parser import text_string_to_metric_families

from portal import launch
from portal.metrics import allowed
from tests.conftest import LOGS, METRICS_TOKEN, PortalServer
from tests.portal.api.test_jobs import wait_for

ACME = "acme.localhost"
Samples = Mapping[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: PortalServer, token: str | None = METRICS_TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    with server.client(ACME) as client:
        return client.get("/metrics", headers=headers)


def samples(server: PortalServer) -> Samples:
    response = scrape(server)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_the_metrics_are_refused_without_the_token(portal_server: PortalServer) -> None:
    for token in (None, "not-the-token"):
        response = scrape(portal_server, token)
        assert response.status_code == 403
        assert response.json()["code"] == "FORBIDDEN"
        assert "RAG_METRICS_TOKEN" in response.json()["error"]
    with portal_server.client(ACME) as client:
        posted = client.post("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert posted.status_code == 405


@pytest.mark.parametrize(
    ("token", "addresses", "remote", "header", "expected"),
    [
        ("", [], "127.0.0.1", "", False),  # never public by default
        ("secret", [], "127.0.0.1", "Bearer secret", True),
        ("secret", [], "127.0.0.1", "Bearer secre", False),
        ("", [], "127.0.0.1", "Bearer ", False),  # no token set: no token opens it
        ("", ["10.0.0.0/8"], "10.2.3.4", "", True),
        ("", ["10.0.0.0/8"], "192.168.1.1", "", False),
        ("", ["::1/128"], "::1", "", True),
        ("", ["10.0.0.0/8"], "not-an-address", "", False),
    ],
)
def test_who_may_read_the_metrics(
    token: str, addresses: list[str], remote: str, header: str, expected: bool
) -> None:
    request = RequestFactory().get("/metrics", REMOTE_ADDR=remote, HTTP_AUTHORIZATION=header)
    with override_settings(RAG_METRICS={"TOKEN": token, "ADDRESSES": addresses}):
        assert allowed(request) is expected


def test_requests_searches_and_jobs_move_the_numbers(portal_server: PortalServer) -> None:
    source = portal_server.new_source()
    route = "/api/rag/search"
    with portal_server.api(ACME, "alice") as api:
        api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": "Otters hold hands while they sleep. " * 5},
        )
        before = samples(portal_server)
        for _ in range(3):
            found = api.post(
                route, json={"collection": source, "query": "otters", "strategy": "bm25"}
            )
            assert found.status_code == 200
        missing = api.post(route, json={"collection": "no_such_source", "query": "otters"})
        assert missing.status_code == 403
        after = samples(portal_server)

        ok = {"method": "POST", "route": route, "status": "200"}
        assert (
            value(after, "rag_http_requests_total", **ok)
            - value(before, "rag_http_requests_total", **ok)
            == 3
        )
        refused = {**ok, "status": "403"}
        assert value(after, "rag_http_requests_total", **refused) >= 1 + value(
            before, "rag_http_requests_total", **refused
        )
        timed = {"method": "POST", "route": route}
        assert value(after, "rag_http_request_duration_seconds_count", **timed) >= 4 + value(
            before, "rag_http_request_duration_seconds_count", **timed
        )
        searched = value(after, "rag_search_duration_seconds_count", strategy="bm25")
        assert searched - value(before, "rag_search_duration_seconds_count", strategy="bm25") == 3
        assert ("rag_queue_jobs", frozenset({("status", "todo")})) in after

        # A job run by a worker process is counted in the same scrape.
        accepted = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": "Herons nest high. " * 20, "async": True},
        )
        assert accepted.status_code == 202, accepted.text
        with launch.worker(portal_server.env, LOGS / "worker-test-metrics.log"):
            job = wait_for(api, accepted.json()["job_id"], timeout=120)
        assert job["state"] == "succeeded", job
        ended = samples(portal_server)
    done = {"kind": "document", "state": "succeeded"}
    assert value(ended, "rag_jobs_ended_total", **done) >= 1 + value(
        after, "rag_jobs_ended_total", **done
    )
    assert value(ended, "rag_job_duration_seconds_count", kind="document") >= 1


def test_legs_embedding_and_the_pool_are_counted(portal_server: PortalServer) -> None:
    source = portal_server.new_source()
    text = "Kingfishers dive for small fish in clear water. " * 6
    with portal_server.api(ACME, "alice") as api:
        before = samples(portal_server)
        api.post("/api/rag/ingest", json={"collection": source, "content": text})
        # The same text again, as another document: every chunk's vector is in the cache.
        api.post("/api/rag/ingest", json={"collection": source, "content": text, "source": "b"})
        for _ in range(2):
            found = api.post(
                "/api/rag/search",
                json={"collection": source, "query": "kingfisher", "strategy": "hybrid"},
            )
            assert found.status_code == 200
        after = samples(portal_server)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    for leg in ("semantic", "bm25", "fuzzy"):
        assert grew("rag_search_leg_duration_seconds_count", leg=leg) == 2, leg
    assert grew("rag_search_leg_duration_seconds_sum", leg="semantic") > 0
    embedded = grew("rag_embedding_texts_total", source="embedded")
    assert embedded >= 1  # the first document's chunks (and the queries, once)
    assert grew("rag_embedding_texts_total", source="cache_hit") >= embedded - 1
    assert grew("rag_pool_usage_seconds_total") > 0
    assert value(after, "rag_pool_connections") >= 1
