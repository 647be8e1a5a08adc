"""The portal's database backend: a connection lost while Django sets it up is a database
away (503, a standby's read retried on the primary), and is not remembered."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, connections
from django.db.backends.base import base as django_base

from portal.database.base import DatabaseWrapper
from portal.rag.errors import database_unavailable


@pytest.mark.django_db
def test_a_connection_lost_while_set_up_is_unavailable_and_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first connection of a process to this database: Django checks its version once.
    monkeypatch.setattr(django_base, "RAN_DB_VERSION_CHECK", set())
    wrapper = connections.create_connection("default")
    assert isinstance(wrapper, DatabaseWrapper)
    # What psycopg reports of a connection lost before Django read the server's version (a
    # standby killed under load, tests/portal/test_replicas.py: "found 0.0", a 500).
    monkeypatch.setattr(psycopg.ConnectionInfo, "server_version", property(lambda _: 0))

    try:
        with pytest.raises(OperationalError) as raised:
            wrapper.ensure_connection()
        assert database_unavailable(raised.value)

        monkeypatch.undo()  # the server is back
        wrapper.close()  # as the next request's health check does with the unusable connection
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
        assert wrapper.pg_version >= 140000
    finally:
        wrapper.close()
