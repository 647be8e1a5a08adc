"""URLs of the public host: the platform admin (tenants and domains) and the health check."""

from django.urls import path

from portal.views import health
from tenants.admin import platform_admin_site

urlpatterns = [
    path("admin/", platform_admin_site.urls),
    path("health", health, name="health"),
]

# Every error no view answered is JSON too (503 DATABASE_UNAVAILABLE or the API's 500).
handler500 = "portal.views.server_error"
