"""URLs of the public host: the platform admin (tenants and domains) and the health check."""

from django.urls import path

from portal.views import health
from tenants.admin import platform_admin_site

urlpatterns = [
    path("admin/", platform_admin_site.urls),
    path("health", health, name="health"),
]
