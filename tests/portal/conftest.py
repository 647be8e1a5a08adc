"""Fixtures of the portal's tests that take its database away."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.conftest import DEMO_PASSWORD, LOGS

if TYPE_CHECKING:
    from tests.portal.private_postgres import Portal


@pytest.fixture(scope="session")
def portal() -> Iterator[Portal]:
    """The portal on a PostgreSQL that its tests may crash, stop and start. One for the
    session, shared by the modules that use it: preparing it (migrations, demo tenants,
    gunicorn) takes half a minute."""
    # Imported here: only the tests that use the fixture need pgserver's binaries (and fail,
    # not skip, without them).
    from tests.portal.private_postgres import private_portal

    with private_portal(DEMO_PASSWORD, LOGS / "portal-server-outage-test.log") as served:
        yield served
