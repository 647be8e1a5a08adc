"""``POST /api/auth/login``: a tenant user's credentials for a bearer token (SPEC A1)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate, get_user_model
from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import ERRORS
from portal.api.fields import InputSerializer, StrictCharField
from portal.api.tokens import issue_token
from portal.login_guard import FailedLogins
from portal.throttling import LoginRateThrottle


class LoginView(APIView):
    """Exchange a tenant user's credentials for a bearer token (SPEC A1)."""

    permission_classes = (AllowAny,)
    authentication_classes = ()
    throttle_classes = (LoginRateThrottle,)

    class Input(InputSerializer):
        username = StrictCharField(required=False, max_length=150)
        email = StrictCharField(required=False, max_length=254)
        password = StrictCharField(max_length=1024, trim_whitespace=False)

        any_of = ("username", "email")

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if not attrs.get("username") and not attrs.get("email"):
                raise serializers.ValidationError({"username": ["Give a username or an email."]})
            return attrs

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        access_token = serializers.CharField()
        token_type = serializers.CharField()
        expires_in = serializers.IntegerField()

    def get_authenticate_header(self, request: Request) -> str:
        # Without an authentication class DRF would turn a failed login into 403.
        return "Bearer"

    @extend_schema(request=Input, responses={200: Output, **ERRORS})
    def post(self, request: Request) -> Response:
        body = self.Input(data=request.data)
        body.is_valid(raise_exception=True)
        username = body.validated_data.get("username")
        if not username:
            match = (
                get_user_model()
                .objects.filter(email__iexact=body.validated_data["email"])
                .order_by("pk")
                .first()
            )
            username = match.get_username() if match else None
        # Failures count per account (the name as given), so guesses spread over many
        # addresses still stop; the per-address throttle above counts every attempt.
        failures = FailedLogins(str(username or body.validated_data.get("email", "")))
        wait = failures.attempt()  # counted as a failure until the password proves otherwise
        if wait is not None:
            raise Throttled(wait, "Too many failed logins for this account.")
        user = (
            authenticate(request, username=username, password=body.validated_data["password"])
            if username
            else None
        )
        if user is None:
            raise AuthenticationFailed("Invalid username or password.")
        failures.succeeded()
        token = issue_token(user=user, schema_name=connection.schema_name)  # type: ignore[attr-defined]
        return Response(self.Output(token).data)
