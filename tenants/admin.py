"""Admin registrations.

Two admin sites: the default ``admin.site`` serves each tenant's host (its users, and what
tenant admins manage); ``platform_admin_site`` serves only the public host and is the one place
where tenants and domains are managed. A tenant admin can therefore never reach the registry.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django_tenants.admin import TenantAdminMixin

from portal.rag.context_retrieval import profile_collection_check
from rag_plugin.exceptions import RagError
from tenants.admin_audit import AuditedAdmin, AuditEventAdmin
from tenants.admin_jobs import IngestJobAdmin
from tenants.admin_keys import ApiKeyAdmin
from tenants.admin_quotas import TenantLimitsMixin, UserQuotaAdmin
from tenants.models import (
    ApiKey,
    AuditEvent,
    Domain,
    IngestJob,
    ProfileCollection,
    RagSource,
    RetrievalProfile,
    Synonym,
    Tenant,
    UserQuota,
)
from tenants.services import api_tokens_revoke


class PlatformAdminSite(admin.AdminSite):
    """The platform operator's admin on the public host."""

    site_header = "RAG portal: platform administration"
    site_title = "RAG platform admin"


platform_admin_site = PlatformAdminSite(name="platform_admin")


class DomainInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Domain
    extra = 1


@admin.register(Tenant, site=platform_admin_site)
class TenantAdmin(TenantLimitsMixin, TenantAdminMixin, admin.ModelAdmin):  # type: ignore[misc,type-arg]
    list_display = ("name", "schema_name", "created_on")
    search_fields = ("name", "schema_name")
    inlines = (DomainInline,)


@admin.register(Domain, site=platform_admin_site)
class DomainAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("domain", "tenant", "is_primary")
    search_fields = ("domain",)


# The platform's own operators are users of the public schema.
platform_admin_site.register(User, UserAdmin)
platform_admin_site.register(Group, GroupAdmin)


class TenantUserAdmin(AuditedAdmin, UserAdmin):  # type: ignore[type-arg]
    """A tenant's users, with an action that ends all API tokens of the selected users."""

    actions = ("revoke_api_tokens",)

    @admin.action(description="Revoke API tokens of the selected users")
    def revoke_api_tokens(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        actor = request.user.get_username() if request.user.is_authenticated else ""
        users = list(queryset)
        for user in users:
            api_tokens_revoke(user=user, actor=actor)
            self.log_change(request, user, "Revoked all API tokens.")
        names = ", ".join(user.get_username() for user in users)
        self.message_user(
            request, f"Revoked the API tokens of {len(users)} user(s): {names}.", messages.SUCCESS
        )


class TenantGroupAdmin(AuditedAdmin, GroupAdmin):
    """A tenant's groups, their changes recorded like every other admin change."""


# Each tenant's users and groups, on the tenant's own admin (replaces Django's defaults).
admin.site.unregister(User)
admin.site.register(User, TenantUserAdmin)
admin.site.unregister(Group)
admin.site.register(Group, TenantGroupAdmin)

admin.site.site_header = "RAG portal: tenant administration"
admin.site.site_title = "RAG tenant admin"


@admin.register(RagSource)
class RagSourceAdmin(AuditedAdmin):
    """The tenant's RAG source allowlist: default deny, one row per allowed source."""

    list_display = ("name", "enabled", "note", "updated_by", "updated_at")
    list_editable = ("enabled",)
    list_filter = ("enabled",)
    search_fields = ("name", "note")
    readonly_fields = ("created_by", "created_at", "updated_by", "updated_at")
    fields = ("name", "enabled", "note", *readonly_fields)

    def save_model(self, request: HttpRequest, obj: RagSource, form: Any, change: bool) -> None:
        actor = request.user.get_username() if request.user.is_authenticated else ""
        if not change:
            obj.created_by = actor
        obj.updated_by = actor
        super().save_model(request, obj, form, change)


class ProfileCollectionForm(forms.ModelForm):  # type: ignore[type-arg]
    """A profile's collection, refused when no search could use it: a source the allowlist
    does not enable, or a shared collection the tenant does not have (a typo such as 'dcos'
    would otherwise save, and every answer would have an empty context)."""

    class Meta:
        model = ProfileCollection
        fields = ("collection", "shared", "weight", "priority")

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        name = cleaned.get("collection")
        # Rows left as they were are not checked again: editing a profile's other settings
        # does not wait on a collection that was deleted since.
        if name and self.has_changed() and not cleaned.get("DELETE"):
            try:
                profile_collection_check(collection=name, shared=bool(cleaned.get("shared")))
            except RagError as exc:
                self.add_error("collection", str(exc))
        return cleaned


class ProfileCollectionInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ProfileCollection
    form = ProfileCollectionForm
    extra = 1


@admin.register(RetrievalProfile)
class RetrievalProfileAdmin(AuditedAdmin):
    """Retrieval profiles: which collections to search, how to weigh, filter and rerank."""

    list_display = (
        "name",
        "collections_display",
        "strategy",
        "retrieval_k",
        "min_relevance",
        "rerank",
        "expand_query",
    )
    search_fields = ("name", "description", "collections__collection")
    inlines = (ProfileCollectionInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[RetrievalProfile]:
        return super().get_queryset(request).prefetch_related("collections")

    @admin.display(description="collections")
    def collections_display(self, profile: RetrievalProfile) -> str:
        return ", ".join(str(entry) for entry in profile.collections.all()) or "none"


@admin.register(Synonym)
class SynonymAdmin(AuditedAdmin):
    """The tenant's synonym table for lexical query expansion."""

    list_display = ("term", "synonyms")
    search_fields = ("term", "synonyms")


# Ingestion jobs: read-only, with cancel and retry actions (tenants/admin_jobs.py).
admin.site.register(IngestJob, IngestJobAdmin)
# The audit log: read-only, the tenant's own events (tenants/admin_audit.py).
admin.site.register(AuditEvent, AuditEventAdmin)
# API keys: made through the key services, revoked, never edited (tenants/admin_keys.py).
admin.site.register(ApiKey, ApiKeyAdmin)
# Each user's limits within the tenant's, with the usage (tenants/admin_quotas.py).
admin.site.register(UserQuota, UserQuotaAdmin)
