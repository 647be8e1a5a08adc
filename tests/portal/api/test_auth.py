"""Login, tokens and throttling (SPEC A1, T2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_context

from portal.api.tokens import issue_token, user_for_token
from portal.throttling import LoginRateThrottle
from tests.conftest import PortalServer

ACME = "acme.localhost"


@pytest.mark.parametrize(
    "credentials",
    [{"username": "alice"}, {"email": "alice@acme.localhost"}, {"email": "ALICE@acme.localhost"}],
)
def test_login_by_username_or_email_returns_a_bearer_token(
    portal_server: PortalServer, credentials: dict[str, str]
) -> None:
    with portal_server.client(ACME) as client:
        response = client.post(
            "/api/auth/login", json={**credentials, "password": portal_server.password}
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 12 * 3600
    with portal_server.client(ACME, body["access_token"]) as client:
        assert client.get("/api/rag/collections").status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"username": "alice", "password": "wrong"},
        {"username": "nobody", "password": "whatever"},
        {"email": "nobody@acme.localhost", "password": "whatever"},
    ],
)
def test_bad_credentials_get_401(portal_server: PortalServer, body: dict[str, str]) -> None:
    with portal_server.client(ACME) as client:
        response = client.post("/api/auth/login", json=body)
    assert response.status_code == 401
    assert response.json() == {
        "error": "Unauthorized: Invalid username or password.",
        "code": "AUTHENTICATION_FAILED",
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"password": "x"}, "username"),
        ({"username": "alice"}, "password"),
        ({"username": 5, "password": "x"}, "username"),
    ],
)
def test_incomplete_login_bodies_get_400(
    portal_server: PortalServer, body: dict[str, object], named: str
) -> None:
    with portal_server.client(ACME) as client:
        response = client.post("/api/auth/login", json=body)
    assert response.status_code == 400
    assert named in response.json()["error"]


def test_the_public_host_has_no_api(portal_server: PortalServer) -> None:
    with portal_server.client("localhost") as client:
        response = client.post("/api/auth/login", json={"username": "a", "password": "b"})
    assert response.status_code == 404


def end_by_password(user: Any) -> None:
    user.set_password("second-pass-456")


def end_by_deactivation(user: Any) -> None:
    user.is_active = False  # issue 16 asks to keep a test of this one


def end_by_revocation(user: Any) -> None:
    from tenants.services import api_tokens_revoke

    assert api_tokens_revoke(user=user, actor="admin") == 1


@pytest.mark.django_db
@pytest.mark.parametrize("end", [end_by_password, end_by_deactivation, end_by_revocation])
def test_a_token_is_bound_to_the_tenant_and_ends_with_the_password_the_account_or_a_revocation(
    demo_tenants: object, end: Callable[[Any], None]
) -> None:
    from tenants.services import user_ensure

    username = f"tokens_{end.__name__}"
    user_ensure(schema_name="acme", username=username, password="first-pass-123")
    with schema_context("acme"):
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.get(username=username)
        token = issue_token(user=user, schema_name="acme").access_token
        assert user_for_token(token=token, schema_name="acme") == user
        assert user_for_token(token=token, schema_name="globex") is None
        end(user)
        user.save()
        assert user_for_token(token=token, schema_name="acme") is None


@pytest.mark.django_db
def test_a_revocation_ends_only_that_users_earlier_tokens(demo_tenants: object) -> None:
    from django.contrib.auth import get_user_model

    from tenants.services import api_tokens_revoke, user_ensure

    for username in ("revoked_one", "revoked_other"):
        user_ensure(schema_name="acme", username=username, password="first-pass-123")
    with schema_context("acme"):
        users = get_user_model().objects
        one, other = users.get(username="revoked_one"), users.get(username="revoked_other")
        before = issue_token(user=one, schema_name="acme").access_token
        untouched = issue_token(user=other, schema_name="acme").access_token
        api_tokens_revoke(user=one, actor="admin")
        api_tokens_revoke(user=one, actor="admin")  # a second revocation ends the same tokens
        after = issue_token(user=one, schema_name="acme").access_token
        assert user_for_token(token=before, schema_name="acme") is None
        assert user_for_token(token=after, schema_name="acme") == one  # logging in again works
        assert user_for_token(token=untouched, schema_name="acme") == other


@pytest.mark.django_db
def test_login_attempts_are_throttled_per_tenant_and_address(
    demo_tenants: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.cache import cache

    cache.clear()
    monkeypatch.setattr(LoginRateThrottle, "rate", "3/minute")
    client = Client(HTTP_HOST=ACME)
    statuses = [
        client.post(
            "/api/auth/login",
            {"username": "ghost", "password": "x"},
            content_type="application/json",
        ).status_code
        for _ in range(4)
    ]
    connection.set_schema_to_public()
    other_tenant = Client(HTTP_HOST="globex.localhost").post(
        "/api/auth/login", {"username": "ghost", "password": "x"}, content_type="application/json"
    )

    assert statuses == [401, 401, 401, 429]
    assert other_tenant.status_code == 401
