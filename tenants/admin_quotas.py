"""Quotas in the admins (SPEC O7): the platform admin sets each tenant's limits and sees what
it keeps; a tenant admin sets each user's, within the tenant's, and sees every user's usage.

Limits are checked where data is written (:mod:`portal.rag.quotas`); these pages only set
them and show the usage, which is read live (the stores keep their counts current).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import filesizeformat
from django_tenants.utils import schema_context

from portal.rag import audit, quotas
from tenants.admin_audit import AuditedAdmin
from tenants.models import Limits, Tenant, UserQuota

_LABELS = (
    ("documents", "documents"),
    ("chunks", "chunks"),
    ("text_bytes", "text"),
    ("file_bytes", "files"),
    ("queued_jobs", "queued jobs"),
)


def _amounts(held: quotas.Held) -> dict[str, int]:
    return {
        "documents": held.stored.documents,
        "chunks": held.stored.chunks,
        "text_bytes": held.stored.text_bytes,
        "file_bytes": held.file_bytes,
        "queued_jobs": held.queued_jobs,
    }


def describe(held: quotas.Held, quota: quotas.Quota) -> str:
    """``12 / 100 documents, 3.1 MB / no limit text, ...``."""
    amounts = _amounts(held)
    parts = []
    for field, label in _LABELS:
        limit = getattr(quota, field)
        shown = [amounts[field], limit]
        if field.endswith("_bytes"):
            shown = [filesizeformat(v) if v is not None else None for v in shown]
        parts.append(f"{shown[0]} / {shown[1] if limit is not None else 'no limit'} {label}")
    return ", ".join(parts)


def tenant_usage(tenant: Tenant) -> str:
    """What the tenant keeps, against its limits (read in its schema)."""
    with schema_context(tenant.schema_name):
        held = quotas.tenant_held(tenant.schema_name)
    return describe(held, quotas.Quota.of(tenant))


class UserQuotaForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = UserQuota
        fields = ("user", *Limits.LIMIT_FIELDS)

    def clean(self) -> dict[str, Any]:
        """A user's limit may not pass the tenant's (the tenant's would refuse first anyway,
        so a larger one would only mislead)."""
        data = super().clean() or {}
        tenant = quotas.tenant_quota()
        for field in Limits.LIMIT_FIELDS:
            ceiling = getattr(tenant, field.removeprefix("max_"))
            value = data.get(field)
            if ceiling is not None and (value is None or value > ceiling):
                self.add_error(
                    field,
                    f"The tenant may keep at most {ceiling}; set this user's limit at or below "
                    "it (the platform admin raises the tenant's).",
                )
        return data


class UserQuotaAdmin(AuditedAdmin):
    """Each user's limits and usage; the tenant's above the list."""

    form = UserQuotaForm
    list_display = ("user", "usage", "updated_at")
    search_fields = ("user__username",)

    @admin.display(description="Usage / limit")
    def usage(self, quota: UserQuota) -> str:
        return describe(quotas.user_held(quota.user), quotas.Quota.of(quota))

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        held = quotas.tenant_held()
        self.message_user(
            request, f"This tenant keeps {describe(held, quotas.tenant_quota())}.", messages.INFO
        )
        return super().changelist_view(request, extra_context)


class TenantLimitsMixin:
    """The platform admin's tenant page: its limits (the model's fields) and its usage. A
    change of the limits is recorded in the tenant's own audit log, where its admins see it,
    by the platform operator's name."""

    readonly_fields: tuple[str, ...] = ("usage",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        stored = Tenant.objects.filter(pk=obj.pk).first() if change else None
        before = {f: getattr(stored, f) for f in Limits.LIMIT_FIELDS} if stored else None
        super().save_model(request, obj, form, change)  # type: ignore[misc]
        after = {f: getattr(obj, f) for f in Limits.LIMIT_FIELDS}
        if before == after or (before is None and not any(v is not None for v in after.values())):
            return
        with schema_context(obj.schema_name):
            audit.record(
                "tenant.limits_update",
                actor=None,
                actor_name=f"platform:{request.user.get_username()}",
                object_type="tenant",
                object_id=obj.schema_name,
                before=before,
                after=after,
            )

    @admin.display(description="Usage / limit")
    def usage(self, tenant: Model) -> str:
        assert isinstance(tenant, Tenant)
        return tenant_usage(tenant) if tenant.pk else "—"
