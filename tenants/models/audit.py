"""The tenant's append-only audit log (SPEC O6)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """One write or admin change of the tenant (SPEC O6): who did what to which object, when,
    from where, and the object before and after where that applies.

    Append-only: the database refuses to change a row, and to delete one except under the
    retention prune (``manage.py rag_audit_prune``, migration 0009's trigger). ``actor_name``
    keeps the name when the user is deleted later.
    """

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        # Deleting a user touches none of its past events (an UPDATE the trigger refuses):
        # the id stays, and actor_name says who it was.
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="audit_events",
        db_constraint=False,
    )
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=64, db_index=True, help_text="e.g. document.delete")
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=255, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=32, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ("-at", "-id")
        verbose_name = "audit event"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_id}"
