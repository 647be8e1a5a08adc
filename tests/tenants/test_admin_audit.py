"""The audit log (SPEC O6) in process: admin changes recorded with before and after, the
tenant's events browsable and exportable but never editable, the table append-only in the
database itself, and the retention prune the one deletion it allows."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.utils import timezone

from portal.rag import audit
from tenants.models import AuditEvent, RagSource

pytestmark = pytest.mark.django_db(transaction=False)

ACME = "acme.localhost"
EVENTS = "/admin/tenants/auditevent/"


@pytest.fixture
def admin_client(acme: None) -> Client:
    user = User.objects.create(username="audit_admin", is_staff=True, is_superuser=True)
    client = Client(HTTP_HOST=ACME)
    client.force_login(user)
    return client


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def test_an_allowlist_entry_made_changed_and_deleted_in_the_admin_is_recorded(
    admin_client: Client,
) -> None:
    name = f"src_{uuid.uuid4().hex[:8]}"
    added = admin_client.post(
        "/admin/tenants/ragsource/add/", {"name": name, "enabled": "on", "note": "first"}
    )
    assert added.status_code == 302, added.content
    source = RagSource.objects.get(name=name)
    changed = admin_client.post(
        f"/admin/tenants/ragsource/{source.pk}/change/", {"name": name, "note": "off now"}
    )
    assert changed.status_code == 302, changed.content
    deleted = admin_client.post(f"/admin/tenants/ragsource/{source.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302

    (create,) = [e for e in events("ragsource.create") if e.object_id == str(source.pk)]
    assert (create.actor_name, create.before, create.after["enabled"]) == (
        "audit_admin",
        None,
        True,
    )
    (update,) = [e for e in events("ragsource.update") if e.object_id == str(source.pk)]
    assert (update.before["enabled"], update.after["enabled"]) == (True, False)
    assert (update.before["note"], update.after["note"]) == ("first", "off now")
    (delete,) = [e for e in events("ragsource.delete") if e.object_id == str(source.pk)]
    assert (delete.before["name"], delete.after) == (name, None)
    assert create.request_id
    assert create.request_id != update.request_id
    assert create.address == "127.0.0.1"


def test_a_users_change_is_recorded_without_the_password(admin_client: Client) -> None:
    user = User.objects.create_user(username="audit_carl", password="secret-pass-1")
    revoked = admin_client.post(
        "/admin/auth/user/",
        {"action": "revoke_api_tokens", "_selected_action": [str(user.pk)], "index": 0},
    )
    assert revoked.status_code == 302
    (event,) = [e for e in events("user.tokens_revoke") if e.object_id == str(user.pk)]
    assert (event.actor_name, event.after["username"]) == ("audit_admin", "audit_carl")
    record = audit.record("user.update", actor=None, object_type="user", after=audit.snapshot(user))
    assert "password" not in record.after


def test_the_log_is_read_only_in_the_admin_and_exports_json_lines(admin_client: Client) -> None:
    event = audit.record(
        "document.delete",
        actor=None,
        object_type="document",
        object_id="doc-9",
        before={"collection": "docs"},
    )
    page = admin_client.get(EVENTS)
    assert page.status_code == 200
    assert "doc-9" in page.content.decode()
    assert admin_client.get(f"{EVENTS}add/").status_code == 403
    change = admin_client.post(f"{EVENTS}{event.pk}/change/", {"action": "x"})
    assert change.status_code == 403
    assert admin_client.post(f"{EVENTS}{event.pk}/delete/", {"post": "yes"}).status_code == 403

    exported = admin_client.post(
        EVENTS, {"action": "export_json_lines", "_selected_action": [str(event.pk)], "index": 0}
    )
    assert exported.status_code == 200
    assert exported["Content-Type"] == "application/x-ndjson"
    (line,) = b"".join(exported.streaming_content).decode().splitlines()  # type: ignore[attr-defined]
    assert json.loads(line) | {"at": ""} == {
        "id": event.pk,
        "at": "",
        "tenant": "acme",
        "actor": "",
        "action": "document.delete",
        "object_type": "document",
        "object_id": "doc-9",
        "before": {"collection": "docs"},
        "after": None,
        "request_id": "",
        "address": None,
    }


def test_the_database_refuses_to_change_or_delete_an_event(acme: None) -> None:
    event = audit.record("collection.delete", actor=None, object_type="collection")
    for statement in (
        "UPDATE tenants_auditevent SET action = 'nothing' WHERE id = %s",
        "DELETE FROM tenants_auditevent WHERE id = %s",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement, [event.pk])
    assert AuditEvent.objects.get(pk=event.pk).action == "collection.delete"


def test_the_retention_prune_deletes_the_old_events_only(acme: None) -> None:
    old_at = timezone.now() - timedelta(days=400)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tenants_auditevent (at, actor_name, action, object_type, object_id,"
            " request_id) VALUES (%s, 'old', 'document.delete', 'document', 'old-1', '')"
            " RETURNING id",
            [old_at],
        )
        (old_id,) = cursor.fetchone()
    recent = audit.record("document.delete", actor=None, object_type="document")
    assert audit.prune(365) >= 1
    assert not AuditEvent.objects.filter(pk=old_id).exists()
    assert AuditEvent.objects.filter(pk=recent.pk).exists()
    with pytest.raises(Exception, match="at least 1"):
        call_command("rag_audit_prune", "--days", "0")
