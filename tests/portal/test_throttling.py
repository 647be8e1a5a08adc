"""Per-user request rates for search, chat and ingest (SPEC O7), in process: each user has
their own count, a key counts as its user, and the limit answers 429 RATE_LIMITED."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_context

from portal.api.tokens import issue_token
from portal.throttling import IngestRateThrottle, SearchRateThrottle

pytestmark = pytest.mark.django_db

ACME = "acme.localhost"


@pytest.fixture
def tokens(demo_tenants: object) -> Iterator[dict[str, str]]:
    cache.clear()
    users = get_user_model()
    with schema_context("acme"):
        made = {
            name: issue_token(
                user=users.objects.create_user(name, password="x-pass-2026"),
                schema_name=connection.schema_name,  # type: ignore[attr-defined]
            ).access_token
            for name in ("rita", "sam")
        }
    yield made
    cache.clear()


def post(token: str, path: str) -> int:
    client = Client(HTTP_HOST=ACME, HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.post(path, {}, content_type="application/json").status_code


def test_each_user_has_their_own_count_per_kind_of_work(
    tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SearchRateThrottle, "rate", "2/minute")
    monkeypatch.setattr(IngestRateThrottle, "rate", "1/minute")
    # An empty body is a 400, counted like any request: the rate is checked first.
    assert [post(tokens["rita"], "/api/rag/search") for _ in range(3)] == [400, 400, 429]
    assert post(tokens["rita"], "/api/rag/context") == 429  # searches and contexts together
    assert post(tokens["sam"], "/api/rag/search") == 400
    assert [post(tokens["rita"], "/api/rag/ingest") for _ in range(2)] == [400, 429]
    response = Client(HTTP_HOST=ACME, HTTP_AUTHORIZATION=f"Bearer {tokens['sam']}").post(
        "/api/rag/ingest", {}, content_type="application/json"
    )
    assert response.status_code == 400
    response = Client(HTTP_HOST=ACME, HTTP_AUTHORIZATION=f"Bearer {tokens['sam']}").post(
        "/api/rag/ingest", {}, content_type="application/json"
    )
    assert response.status_code == 429
    assert response.json()["code"] == "RATE_LIMITED"
    assert "Retry-After" in response.headers


def test_without_a_rate_nothing_is_limited(tokens: dict[str, str]) -> None:
    assert SearchRateThrottle().rate is None  # RAG_SEARCH_RATE is not set
    assert {post(tokens["rita"], "/api/rag/search") for _ in range(5)} == {400}
