"""WSGI entry point (gunicorn portal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from portal.heap import import_views, settle_heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()

# The start-up heap, views included, out of the garbage collector's walks (portal/heap.py).
import_views()
settle_heap()
