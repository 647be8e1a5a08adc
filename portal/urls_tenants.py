"""URLs of a tenant's host: the tenant admin, the REST API, the health check and, at the
root, the users' workspace."""

from django.contrib import admin
from django.urls import include, path

from portal import admin_views
from portal.views import health

urlpatterns = [
    path("admin/rag/", include(admin_views.urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/", include("portal.api.urls")),
    path("health", health, name="health"),
    path("", include("portal.workspace.urls")),
]

# Every error no view answered is JSON too (503 DATABASE_UNAVAILABLE or the API's 500).
handler500 = "portal.views.server_error"
