"""Admin registrations.

Two admin sites: the default ``admin.site`` serves each tenant's host (its users, and what
tenant admins manage); ``platform_admin_site`` serves only the public host and is the one place
where tenants and domains are managed. A tenant admin can therefore never reach the registry.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django_tenants.admin import TenantAdminMixin

from tenants.models import Domain, Tenant


class PlatformAdminSite(admin.AdminSite):
    """The platform operator's admin on the public host."""

    site_header = "RAG portal: platform administration"
    site_title = "RAG platform admin"


platform_admin_site = PlatformAdminSite(name="platform_admin")


class DomainInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Domain
    extra = 1


@admin.register(Tenant, site=platform_admin_site)
class TenantAdmin(TenantAdminMixin, admin.ModelAdmin):  # type: ignore[misc,type-arg]
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

admin.site.site_header = "RAG portal: tenant administration"
admin.site.site_title = "RAG tenant admin"
