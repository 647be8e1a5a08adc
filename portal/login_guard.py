"""Login protection shared by the API, both admin sites and the workspace (SPEC A5, T2, U1).

Two limits, both kept in the database cache so every app process shares them:

- **per client address** (and tenant): every attempt counts, at ``RAG_LOGIN_RATE`` (default
  10 a minute) — DRF's :class:`~portal.throttling.LoginRateThrottle` on the API, the same
  throttle class here for the admins' and the workspace's login forms;
- **per account** (and tenant): failures count, at most ``RAG_LOGIN_ACCOUNT_FAILURES``
  (default 10) within ``RAG_LOGIN_ACCOUNT_WINDOW_S`` seconds (default 900); a success clears
  them. This is what stops an attacker who spreads guesses over many addresses.

Every attempt on an account is counted before its password is checked, under a lock, and a
success clears the count, so concurrent guesses cannot slip past the limit. Anyone who knows
a user name can lock that account for the window: the price of stopping distributed guessing
(README "Security"). The per-address throttle is DRF's, which counts without a lock.

The client address is the connection's, unless ``RAG_TRUSTED_PROXIES`` says how many proxies
in front of the app append to ``X-Forwarded-For`` (DRF's ``NUM_PROXIES`` rule): with the
default 0 a client-set ``X-Forwarded-For`` changes nothing.
"""

from __future__ import annotations

import hashlib
import math
import time
import unicodedata
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from portal.throttling import AdminLoginRateThrottle

__all__ = ["AdminLoginGuardMiddleware", "FailedLogins"]

LOGIN_FORM_VIEWS = frozenset({"admin:login", "platform_admin:login", "workspace:login"})
"""The login forms: the tenant admin's (``admin.site``), the platform admin's and the
workspace's (the tenant's users, at ``/login/``)."""


class FailedLogins:
    """One account's recent failed logins in one tenant (timestamps in the shared cache)."""

    def __init__(self, username: str) -> None:
        tenant = getattr(connection, "schema_name", "")
        # The name as Django's login form and user model normalise it (NFKC, no surrounding
        # space), casefolded: every spelling that reaches one account counts against it.
        # Hashed: any text a client sends as a user name makes a short, safe cache key.
        name = unicodedata.normalize("NFKC", username.strip()).casefold()
        account = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
        self.key = f"login-failures:{tenant}:{account}"
        self.limit = int(settings.RAG_API["LOGIN_ACCOUNT_FAILURES"])
        self.window = int(settings.RAG_API["LOGIN_ACCOUNT_WINDOW_S"])

    def _recent(self, now: float) -> list[float]:
        stored = cache.get(self.key) or []
        return [t for t in stored if now - t < self.window]

    def attempt(self) -> int | None:
        """Count this attempt as a failure before the password is checked, unless the account
        is over its limit: then return the seconds until it may try again (nothing counted).

        Check and count are one step for every app process: a transaction-scoped advisory
        lock on the account's key serialises them, so concurrent guesses cannot all pass the
        check before any of them is counted. A success then clears the count
        (:meth:`succeeded`)."""
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [self.key])
            now = time.time()
            recent = self._recent(now)
            if len(recent) >= self.limit:
                return max(1, math.ceil(self.window - (now - recent[-self.limit])))
            cache.set(self.key, [*recent, now][-self.limit :], self.window)
            return None

    def succeeded(self) -> None:
        """Forget the failures: the account's owner got in."""
        cache.delete(self.key)


def too_many(wait: int | float | None) -> HttpResponse:
    seconds = max(1, math.ceil(wait or 1))
    response = HttpResponse(
        f"Too many login attempts; try again in {seconds} seconds.\n",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(seconds)
    return response


class AdminLoginGuardMiddleware:
    """Both limits on the admin sites' and the workspace's login forms.

    A POST to one of these login views is refused with 429 while its address or account is over
    its limit; otherwise it is counted against the account and the view runs: a redirect is
    a success, which clears the count; anything else leaves it counted.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or not _is_login_form(request):
            return self.get_response(request)
        throttle = AdminLoginRateThrottle()
        if not throttle.allow_request(request, None):  # type: ignore[arg-type]
            return too_many(throttle.wait())
        failures = FailedLogins(str(request.POST.get("username", "")))
        wait = failures.attempt()
        if wait is not None:
            return too_many(wait)
        response = self.get_response(request)
        if response.status_code == 302:
            failures.succeeded()
        return response


def _is_login_form(request: HttpRequest) -> bool:
    try:
        match = resolve(request.path_info, getattr(request, "urlconf", None))
    except Resolver404:
        return False
    return match.view_name in LOGIN_FORM_VIEWS
