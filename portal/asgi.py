"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from portal.heap import import_views, settle_heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_asgi_application()

# The start-up heap, views included, out of the garbage collector's walks (portal/heap.py).
import_views()
settle_heap()
