"""API keys in the tenant admin (SPEC O8): make one for any user of the tenant (its secret is
shown once, on the page the form returns to), see when each was last used, revoke.

Keys are made and revoked by the key services (:mod:`portal.rag.api_keys`), which check the
collections against the allowlist and record the audit events; nothing edits a key afterwards
(a key that should reach more is a new key), and none is deleted: the row is the record of
what the key could do.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from portal.rag import api_keys
from rag_plugin.exceptions import RagError
from tenants.models import ApiKey


def parse_collections(text: str) -> list[api_keys.KeyCollection]:
    """``docs, shared:faq`` → the user's ``docs`` and the tenant's shared ``faq``."""
    found = []
    for item in text.replace("\n", ",").split(","):
        name = item.strip()
        if not name:
            continue
        shared = name.startswith("shared:")
        found.append(api_keys.KeyCollection(name.removeprefix("shared:").strip(), shared))
    return found


class ApiKeyCreateForm(forms.ModelForm):  # type: ignore[type-arg]
    collection_names = forms.CharField(
        label="Collections",
        help_text="Comma-separated: the user's own collections by name, the tenant's shared "
        "ones as shared:<name> (e.g. docs, shared:faq). Each must be in the allowlist.",
    )
    expires_in_days = forms.IntegerField(
        min_value=1,
        initial=settings.RAG_API["API_KEY_DEFAULT_DAYS"],
        help_text=f"At most {settings.RAG_API['API_KEY_MAX_DAYS']} days.",
    )

    class Meta:
        model = ApiKey
        fields = ("user", "label", "access")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        users = self.fields["user"]
        assert isinstance(users, forms.ModelChoiceField)
        users.queryset = get_user_model().objects.filter(is_active=True)
        self.made: api_keys.MadeKey | None = None
        self.actor: Any = None

    def clean(self) -> dict[str, Any]:
        """Make the key here, so every refusal of the service shows on the form."""
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            self.made = api_keys.api_key_create(
                actor=self.actor,
                user=data["user"],
                label=data["label"],
                collections=parse_collections(data["collection_names"]),
                access=data["access"],
                expires_at=timezone.now() + timedelta(days=data["expires_in_days"]),
            )
        except RagError as error:
            raise ValidationError(str(error)) from error
        return data


@admin.action(description="Revoke the selected API keys")
def revoke_keys(modeladmin: Any, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
    revoked = [
        api_keys.api_key_revoke(actor=request.user, key_id=key.pk)  # type: ignore[arg-type]
        for key in queryset.filter(revoked_at__isnull=True)
    ]
    modeladmin.message_user(request, f"Revoked {len(revoked)} API key(s).", messages.SUCCESS)


class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The tenant's API keys: who they act as, what they reach, until when, last used."""

    list_display = (
        "label",
        "prefix_display",
        "user",
        "access",
        "collections_display",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("access", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("label", "prefix", "user__username")
    actions = (revoke_keys,)
    readonly_fields = (
        "user",
        "label",
        "prefix_display",
        "access",
        "collections_display",
        "expires_at",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    )

    @admin.display(description="Key")
    def prefix_display(self, key: ApiKey) -> str:
        return f"rk_{key.prefix}_…"

    @admin.display(description="Collections")
    def collections_display(self, key: ApiKey) -> str:
        return ", ".join(
            f"shared:{c['name']}" if c.get("shared") else str(c["name"]) for c in key.collections
        )

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is not None:
            return super().get_form(request, obj, change=change, **kwargs)
        form_class = super().get_form(request, obj, form=ApiKeyCreateForm, **kwargs)
        actor = request.user

        class Form(form_class):  # type: ignore[misc,valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.actor = actor

        return Form

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("user", "label", "access", "collection_names", "expires_in_days")
        return self.readonly_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """The form's clean made the key; show its secret once."""
        made = form.made
        obj.pk = made.key.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"API key '{made.key.label}' made. Copy it now, it is not shown again: {made.secret}",
            messages.WARNING,
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
