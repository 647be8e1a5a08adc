"""Request rates, counted in the shared database cache so every app process sees them:
login attempts per client address and tenant (the API's, and the admins' and workspace's
through :mod:`portal.login_guard`), and a user's searches, chats and ingests (SPEC O7).

The address is the connection's, or with ``RAG_TRUSTED_PROXIES`` = N > 0 the one N proxies
back in ``X-Forwarded-For`` (DRF's ``NUM_PROXIES``); per-account login limits are in
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


class UserRateThrottle(SimpleRateThrottle):
    """Requests per (tenant, user) for one kind of work, at the rate its ``scope`` names in
    ``DEFAULT_THROTTLE_RATES`` (``RAG_SEARCH_RATE``, ``RAG_CHAT_RATE``, ``RAG_INGEST_RATE``;
    unset: no limit, and no cache write per request). An API key counts as its user."""

    # None → DEFAULT_THROTTLE_RATES[scope]; tests set a rate here instead.
    rate: str | None = None

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None  # the authentication refuses it
        tenant = getattr(connection, "schema_name", "")
        return self.cache_format % {"scope": self.scope, "ident": f"{tenant}:{user.pk}"}


class SearchRateThrottle(UserRateThrottle):
    """Searches and context requests."""

    scope = "search"


class ChatRateThrottle(UserRateThrottle):
    """Answers and chats (each an LLM call)."""

    scope = "chat"


class IngestRateThrottle(UserRateThrottle):
    """Ingests, uploads and re-indexing."""

    scope = "ingest"
