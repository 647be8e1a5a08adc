"""API keys over REST (SPEC O8): make one (its secret shown once), list yours, revoke one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import ERRORS, caller
from portal.api.fields import (
    BoundedListField,
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from portal.api.serializers import CollectionField
from portal.rag import api_keys
from rag_plugin.exceptions import NotFoundError
from tenants.models import ApiKey


class KeyCollectionInput(InputSerializer):
    """A collection the key reaches: your own ``name``, or the tenant's shared one."""

    name = CollectionField()
    shared = StrictBooleanField(required=False, default=False)


class KeyInput(InputSerializer):
    label = StrictCharField(max_length=100)  # type: ignore[assignment]
    collections = BoundedListField(
        child=KeyCollectionInput(),
        min_length=1,
        max_length=100,
        too_long="A key may name at most {max_length} collections, got {length}.",
    )
    access = serializers.ChoiceField(choices=ApiKey.Access.values, default=ApiKey.Access.READ)
    expires_in_days = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=settings.RAG_API["API_KEY_MAX_DAYS"],
        help_text="Days until the key stops working (default RAG_API_KEY_DEFAULT_DAYS, at "
        "most RAG_API_KEY_MAX_DAYS).",
    )
    user = StrictCharField(
        required=False,
        max_length=150,
        help_text="Tenant admins only: the user the key acts as (default: you).",
    )


class KeyCollectionOutput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    shared = serializers.BooleanField()


class KeyOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]
    prefix = serializers.CharField(help_text="The key's public part: rk_<prefix>_…")
    user = serializers.CharField(source="user.username")
    access = serializers.ChoiceField(choices=ApiKey.Access.values)
    collections = KeyCollectionOutput(many=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class MadeKeyOutput(KeyOutput):
    key = serializers.CharField(
        help_text="The secret: send it as 'Authorization: Bearer <key>'. Shown only now."
    )


class KeyListOutput(serializers.Serializer):  # type: ignore[type-arg]
    keys = KeyOutput(many=True)


KEY_ID_PARAM = OpenApiParameter(
    "key_id", str, OpenApiParameter.PATH, description="The key's id, as making it returned."
)


class KeyListView(APIView):
    """Your API keys (a tenant admin: the tenant's), and making a new one."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(operation_id="auth_keys_list", responses={200: KeyListOutput, **ERRORS})
    def get(self, request: Request) -> Response:
        keys = api_keys.visible_keys(caller(request)).order_by("-created_at", "-id")[:1000]
        return Response(KeyListOutput({"keys": keys}).data)

    @extend_schema(request=KeyInput, responses={201: MadeKeyOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = KeyInput(data=request.data)
        body.is_valid(raise_exception=True)
        data: dict[str, Any] = body.validated_data
        actor = caller(request)
        user = actor
        if data.get("user"):
            found = get_user_model().objects.filter(username=data["user"], is_active=True).first()
            if found is None:
                raise NotFoundError(f"No active user named '{data['user']}' in this tenant.")
            user = found
        days = data.get("expires_in_days", settings.RAG_API["API_KEY_DEFAULT_DAYS"])
        made = api_keys.api_key_create(
            actor=actor,
            user=user,
            label=data["label"],
            collections=[
                api_keys.KeyCollection(c["name"], c["shared"]) for c in data["collections"]
            ],
            access=data["access"],
            expires_at=timezone.now() + timedelta(days=days),
        )
        return Response({**KeyOutput(made.key).data, "key": made.secret}, status=201)


class KeyView(APIView):
    """Revoke one of your API keys (a tenant admin: any of the tenant's)."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(parameters=[KEY_ID_PARAM], responses={200: KeyOutput, **ERRORS})
    def delete(self, request: Request, key_id: str) -> Response:
        key = api_keys.api_key_revoke(actor=caller(request), key_id=key_id)
        return Response(KeyOutput(key).data)
