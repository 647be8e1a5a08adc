"""Small portal views that are not part of the REST API."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse


def health(request: HttpRequest) -> JsonResponse:
    """Report that the app serves and reaches its database (SPEC O3)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"status": "ok", "schema": getattr(connection, "schema_name", None)})
