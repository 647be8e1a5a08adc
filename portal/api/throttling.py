"""Login throttling: attempts per client address and tenant, in the shared database cache."""

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
