"""The settings the test suite runs under: production's (``DEBUG`` off), with a throwaway key.

pytest-django imports this module (pyproject.toml), so an in-process test sees the same
settings a deployment does; only the secret key is made up here, as a deployment's would be.
"""

from __future__ import annotations

import os
import secrets

os.environ.setdefault("DJANGO_SECRET_KEY", f"test-only-{secrets.token_urlsafe(40)}")

from portal.settings import *  # noqa: F403
