"""Small portal views that are not part of the REST API."""

from __future__ import annotations

import dataclasses
import sys
import uuid
from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse

from portal.api.errors import json_server_error
from portal.rag.runtime import replica_set


def health(request: HttpRequest) -> JsonResponse:
    """Report that the app serves and reaches its database (SPEC O3); when it cannot reach it,
    the error ends in :func:`server_error`: 503 ``DATABASE_UNAVAILABLE``. With standbys, each
    one's state (``up``, ``lagging``, ``down``, ``promoted``) and lag as last checked: the
    app serves from the primary whatever they are."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    body: dict[str, Any] = {"status": "ok", "schema": getattr(connection, "schema_name", None)}
    replicas = replica_set()
    if replicas is not None:
        body["replicas"] = [dataclasses.asdict(status) for status in replicas.status()]
    return JsonResponse(body)


def server_error(request: HttpRequest) -> JsonResponse:
    """Django's ``handler500``: the JSON body of an error no view answered (in a middleware
    such as the tenant lookup, or outside DRF): 503 with ``Retry-After`` when the database is
    unavailable, else the API's 500. Django calls it inside its ``except``, so the exception
    in flight is the one that failed the request."""
    request_id = str(getattr(request, "request_id", "") or uuid.uuid4().hex)
    return json_server_error(sys.exc_info()[1], request_id, "handler500")
