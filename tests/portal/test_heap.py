"""Long-running processes freeze their start-up heap, views included, so that a full
garbage collection does not walk it (it stopped a gunicorn worker for 140-190 ms)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref

from django.conf import settings
from django.urls import clear_url_caches, get_resolver

from portal import launch
from portal.heap import import_views, settle_heap


class _Node:
    """A cycle's member, weakly referenceable."""

    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def test_settle_heap_collects_start_up_garbage_and_freezes_the_rest() -> None:
    left_over = _cycle()  # start-up garbage: unreachable, but only a collection frees a cycle
    try:
        settle_heap()
        assert left_over() is None, "frozen, it would never be collected"
        assert gc.get_freeze_count() > 0
        later = _cycle()
        gc.collect()
        assert later() is None, "objects made after the freeze are collected as before"
    finally:
        gc.unfreeze()


def test_import_views_loads_both_urlconfs() -> None:
    clear_url_caches()
    import_views()
    for urlconf in (settings.ROOT_URLCONF, settings.PUBLIC_SCHEMA_URLCONF):
        assert "url_patterns" in vars(get_resolver(urlconf)), urlconf


WSGI = """
import gc, json, sys
import portal.wsgi
from django.conf import settings
from django.urls import get_resolver
print(json.dumps({
    "frozen": gc.get_freeze_count(),
    "tracked": len(gc.get_objects()),
    "views": "url_patterns" in vars(get_resolver(settings.ROOT_URLCONF)),
}))
"""


def test_the_wsgi_entry_point_leaves_the_start_up_heap_frozen() -> None:
    """What gunicorn imports: Django, the views and their imports frozen; next to nothing
    left for a full collection to walk."""
    result = subprocess.run(
        [sys.executable, "-c", WSGI],
        cwd=launch.PROJECT_ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "test-heap-" + "k" * 40,
            "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",  # never connected
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["views"] is True
    assert found["frozen"] > 100_000
    assert found["tracked"] < 1_000
