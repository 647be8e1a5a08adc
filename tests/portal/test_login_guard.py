"""Login limits per account and per address, on the API, both admin sites and the workspace
(SPEC A5, T2, U1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django_tenants.utils import schema_context

from portal.throttling import AdminLoginRateThrottle, LoginRateThrottle

pytestmark = pytest.mark.django_db

ACME = "acme.localhost"
RIGHT = "right-pass-2026"


@pytest.fixture
def limits(demo_tenants: object, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Three failures per account; the per-address limits out of the way unless a test sets
    them; two users in acme and a platform superuser."""
    cache.clear()
    settings.RAG_API = {**settings.RAG_API, "LOGIN_ACCOUNT_FAILURES": 3}
    monkeypatch.setattr(LoginRateThrottle, "rate", "1000/minute")
    monkeypatch.setattr(AdminLoginRateThrottle, "rate", "1000/minute")
    users = get_user_model()
    with schema_context("acme"):
        users.objects.create_user("dora", password=RIGHT, is_staff=True, is_superuser=True)
        users.objects.create_user("erin", password=RIGHT)
    users.objects.create_superuser("root", password=RIGHT)
    yield
    cache.clear()


def api_login(username: str, password: str, **headers: str) -> int:
    response = Client(HTTP_HOST=ACME).post(
        "/api/auth/login",
        {"username": username, "password": password},
        content_type="application/json",
        **headers,
    )
    return response.status_code


@pytest.mark.usefixtures("limits")
def test_failed_logins_per_account_stop_guesses_spread_over_addresses() -> None:
    statuses = [api_login("dora", "wrong", REMOTE_ADDR=f"10.0.0.{i}") for i in range(1, 5)]
    assert statuses == [401, 401, 401, 429]
    assert api_login("dora", RIGHT, REMOTE_ADDR="10.0.0.9") == 429  # locked, even when right
    assert api_login("erin", "wrong") == 401  # another account is not
    assert api_login("DORA", "wrong") == 429  # the same account, however it is spelled


@pytest.mark.usefixtures("limits")
def test_a_successful_login_clears_the_failures() -> None:
    assert [api_login("dora", "wrong") for _ in range(2)] == [401, 401]
    assert api_login("dora", RIGHT) == 200
    assert [api_login("dora", "wrong") for _ in range(3)] == [401, 401, 401]
    assert api_login("dora", "wrong") == 429


@pytest.mark.usefixtures("limits")
def test_x_forwarded_for_is_ignored_without_trusted_proxies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(LoginRateThrottle, "rate", "3/minute")
    statuses = [
        api_login(f"ghost{i}", "x", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}") for i in range(4)
    ]
    assert statuses == [401, 401, 401, 429]


@pytest.mark.usefixtures("limits")
def test_with_a_trusted_proxy_the_address_it_forwarded_is_the_client(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    monkeypatch.setattr(LoginRateThrottle, "rate", "3/minute")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # The proxy appends the address it saw; what the client put before it does not count.
    spread = [
        api_login(f"ghost{i}", "x", HTTP_X_FORWARDED_FOR=f"6.6.6.6, 198.51.100.{i}")
        for i in range(4)
    ]
    same = [
        api_login(f"ghost{i}", "x", HTTP_X_FORWARDED_FOR=f"{i}.{i}.{i}.{i}, 192.0.2.1")
        for i in range(4)
    ]
    assert spread == [401, 401, 401, 401]
    assert same == [401, 401, 401, 429]


def admin_login(host: str, username: str, password: str, **headers: str) -> Any:
    return Client(HTTP_HOST=host).post(
        "/admin/login/", {"username": username, "password": password}, **headers
    )


@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize(("host", "user"), [(ACME, "dora"), ("localhost", "root")])
def test_both_admin_logins_lock_an_account_after_its_failures(host: str, user: str) -> None:
    failed = [admin_login(host, user, "wrong", REMOTE_ADDR=f"10.1.0.{i}") for i in range(3)]
    assert [r.status_code for r in failed] == [200, 200, 200]  # the form, shown again
    locked = admin_login(host, user, RIGHT)
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) > 0
    assert b"Too many login attempts" in locked.content


@pytest.mark.usefixtures("limits")
def test_an_admin_login_success_clears_the_failures() -> None:
    assert [admin_login(ACME, "dora", "wrong").status_code for _ in range(2)] == [200, 200]
    assert admin_login(ACME, "dora", RIGHT).status_code == 302
    assert [admin_login(ACME, "dora", "wrong").status_code for _ in range(3)] == [200] * 3
    assert admin_login(ACME, "dora", RIGHT).status_code == 429


@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize("host", [ACME, "localhost"])
def test_admin_logins_are_throttled_per_address(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setattr(AdminLoginRateThrottle, "rate", "2/minute")
    statuses = [
        admin_login(host, f"ghost{i}", "x", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(3)
    ]
    assert statuses == [200, 200, 429]


@pytest.mark.usefixtures("limits")
def test_the_workspace_login_has_the_same_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    def workspace_login(password: str, address: str = "10.2.0.1", user: str = "erin") -> int:
        client = Client(HTTP_HOST=ACME)
        data = {"username": user, "password": password}
        return client.post("/login/", data, REMOTE_ADDR=address).status_code

    assert [workspace_login("wrong") for _ in range(2)] == [200, 200]  # the form again
    assert workspace_login(RIGHT) == 302  # in, and the failures are forgotten
    assert [workspace_login("wrong", f"10.2.0.{i}") for i in range(3)] == [200] * 3
    assert workspace_login(RIGHT) == 429
    monkeypatch.setattr(AdminLoginRateThrottle, "rate", "1/minute")
    per_address = [workspace_login("x", "10.3.0.1", f"ghost{i}") for i in range(2)]
    assert per_address == [200, 429]


@pytest.mark.usefixtures("limits")
def test_every_spelling_of_an_account_counts_against_it() -> None:
    spellings = [" dora", "dora  ", "ｄora"]  # the admin form strips and NFKC-normalises
    failed = [admin_login(ACME, name, "wrong").status_code for name in spellings]
    assert failed == [200, 200, 200]
    assert admin_login(ACME, "dora", RIGHT).status_code == 429


@pytest.mark.usefixtures("limits")
def test_concurrent_attempts_cannot_slip_past_the_account_limit() -> None:
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    from portal.login_guard import FailedLogins

    cache.clear()
    start = Barrier(12)

    def guess(_: int) -> int | None:
        try:
            start.wait()  # all twelve at once, each on its own database connection
            return FailedLogins("zed").attempt()
        finally:
            connection.close()

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(guess, range(12)))
    assert sum(result is None for result in results) == 3  # the limit of the fixture
    assert all(isinstance(result, int) and result > 0 for result in results if result is not None)
    cache.clear()
