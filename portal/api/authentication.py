"""DRF authentication with the bearer tokens of :mod:`portal.api.tokens`."""

from __future__ import annotations

from django.db import connection
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from portal.api.tokens import TOKEN_TYPE, user_for_token
from portal.rag.api_keys import is_api_key, user_for_api_key


class BearerTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <token>``, valid only on the tenant that issued it: a login
    token (:mod:`portal.api.tokens`) or an API key (:mod:`portal.rag.api_keys`), whose user
    comes back narrowed to the key's collections."""

    keyword = TOKEN_TYPE

    def authenticate(self, request: Request) -> tuple[object, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme != self.keyword or not token.strip():
            raise AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        token = token.strip()
        if is_api_key(token):
            user = user_for_api_key(token)
            if user is None:
                raise AuthenticationFailed("Invalid, expired or revoked API key for this tenant.")
            return user, token
        schema_name = getattr(connection, "schema_name", "")
        user = user_for_token(token=token, schema_name=schema_name)
        if user is None:
            raise AuthenticationFailed("Invalid or expired token for this tenant.")
        return user, token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 when no token is sent.
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """How the OpenAPI schema describes :class:`BearerTokenAuthentication`: the ``bearerAuth``
    scheme, on exactly the operations that use it (not on the login)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}
