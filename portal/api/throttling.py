"""Login throttling: attempts per client address and tenant, in the shared database cache.

The address is the connection's, or with ``RAG_TRUSTED_PROXIES`` = N > 0 the one N proxies
back in ``X-Forwarded-For`` (DRF's ``NUM_PROXIES``); per-account limits are in
:mod:`portal.login_guard`.
"""

from __future__ import annotations

from django.db import connection
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView


class LoginRateThrottle(SimpleRateThrottle):
    """Limit login attempts per (tenant, client IP) to ``RAG_API['LOGIN_RATE']``.

    The counters live in the database cache, so every app process shares them.
    """

    scope = "login"
    # None → DEFAULT_THROTTLE_RATES["login"] (RAG_LOGIN_RATE); tests set a rate here instead.
    rate: str | None = None

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        tenant = getattr(connection, "schema_name", "")
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"{tenant}:{self.get_ident(request)}",
        }


class AdminLoginRateThrottle(LoginRateThrottle):
    """The same limit on the admin sites' login forms, counted apart from the API's."""

    scope = "admin_login"
