"""A long-running process's start-up heap, kept out of the garbage collector's walks.

Django and the libraries it imports (and, in the ingestion worker, the embedding model) make
about 215,000 objects that live as long as the process. Python's full (generation 2)
collection walks every one of them: measured in a gunicorn worker of the portal, 140–190 ms
during which the request it hit waits, once every ~140 API requests (a ``gc`` callback; it
was the 200 ms max of the submit-latency bench). :func:`settle_heap` moves them out of sight
once start-up is done; objects made later are collected as before.
"""

from __future__ import annotations

import gc

from django.conf import settings
from django.urls import get_resolver


def import_views() -> None:
    """Import every URLconf and the views they name now: Django would at the first request,
    after :func:`settle_heap`, leaving their objects to every full collection."""
    for urlconf in (settings.ROOT_URLCONF, getattr(settings, "PUBLIC_SCHEMA_URLCONF", None)):
        if urlconf:
            get_resolver(urlconf).url_patterns  # noqa: B018 (the import is the point)


def settle_heap() -> None:
    """Collect what start-up left unreachable, then freeze the rest (``gc.freeze``): it lives
    as long as the process, so a full collection need not walk it.

    In the ingestion worker, before it, a full collection walked about 220,000 objects and
    stopped the worker for about 100 ms once every 30 or so jobs of 10 documents; after it,
    none happened in those 30 jobs (measured with a ``gc`` callback).
    """
    gc.collect()
    gc.freeze()
