"""django-tenants' PostgreSQL backend (a schema per tenant), with one fix for a database that
goes away while Django sets a new connection up.

Django reads the server's version when a process first connects to a database (once per
alias) and keeps it on the thread's connection wrapper (``pg_version`` is a cached property).
psycopg reports version 0 of a connection that was lost, so a server that went away during
that first connection made Django refuse it as "PostgreSQL 0.0" (``NotSupportedError``: a
500, not the 503 of a database away, and no fallback from a standby to the primary), and left
the wrapper believing it. Seen with a standby killed under load (tests/portal/test_replicas.py).
"""

from __future__ import annotations

import psycopg
from django.utils.functional import cached_property
from django_tenants.postgresql_backend.base import DatabaseWrapper as TenantDatabaseWrapper


class DatabaseWrapper(TenantDatabaseWrapper):  # type: ignore[misc]
    @cached_property
    def pg_version(self) -> int:
        with self.temporary_connection():
            version = int(self.connection.info.server_version)
        if not version:
            # Raised inside Django's connect, which reports it as its OperationalError (and
            # portal.rag.errors as the database being unavailable); nothing is kept.
            raise psycopg.OperationalError(
                "The connection to the database was lost while it was being set up."
            )
        return version
