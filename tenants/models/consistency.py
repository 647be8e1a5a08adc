"""Read-your-writes on standbys: where each user's last write landed on the primary."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WriteMark(models.Model):
    """Where in the primary's WAL a user's last write landed, so that their next reads on a
    standby wait until it has replayed that far (portal/rag/consistency.py; read-your-writes
    with ``DATABASE_REPLICA_URLS``). Read and written on the primary only."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="write_mark",
    )
    # pg_lsn as an integer (64 bits; PostgreSQL's own text form is hi/lo hexadecimal).
    lsn = models.BigIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenants_writemark"  # named in portal/rag/consistency.py's upsert
        verbose_name = "write mark"

    def __str__(self) -> str:
        return f"write mark of {self.user}"
