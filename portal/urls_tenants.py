"""URLs of a tenant's host: the tenant admin, the health check (and later the REST API)."""

from django.contrib import admin
from django.urls import path

from portal.views import health

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", health, name="health"),
]
