"""API keys in the tenant admin (SPEC O8): made for a user with the secret shown once, refused
with the service's reason, revoked by an action, never edited."""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from portal.rag.api_keys import user_for_api_key
from portal.rag.scope import grant_of
from tenants.models import ApiKey, AuditEvent, RagSource

pytestmark = pytest.mark.django_db(transaction=False)

ACME = "acme.localhost"
KEYS = "/admin/tenants/apikey/"


@pytest.fixture
def admin_client(acme: None) -> Client:
    user = User.objects.create(username="keys_admin", is_staff=True, is_superuser=True)
    client = Client(HTTP_HOST=ACME)
    client.force_login(user)
    return client


@pytest.fixture
def source(acme: None) -> str:
    name = f"src_{uuid.uuid4().hex[:8]}"
    RagSource.objects.create(name=name, enabled=True)
    return name


def add(client: Client, **fields: object) -> object:
    return client.post(f"{KEYS}add/", fields, follow=True)


def test_an_admin_makes_a_key_for_a_user_sees_the_secret_once_and_revokes_it(
    admin_client: Client, source: str
) -> None:
    alice = User.objects.create(username=f"alice_{uuid.uuid4().hex[:6]}")
    response = add(
        admin_client,
        user=alice.pk,
        label="nightly import",
        access="read",
        collection_names=f"{source}, shared:{source}",
        expires_in_days=30,
    )
    shown = response.content.decode()  # type: ignore[attr-defined]
    secret = re.search(r"rk_[0-9a-f]{12}_[A-Za-z0-9_-]+", shown)
    assert secret is not None, shown
    key = ApiKey.objects.get(label="nightly import", user=alice)
    assert key.collections == [
        {"name": source, "shared": False},
        {"name": source, "shared": True},
    ]
    assert secret.group(0) not in admin_client.get(f"{KEYS}{key.pk}/change/").content.decode()
    user = user_for_api_key(secret.group(0))
    assert user is not None
    assert user.pk == alice.pk
    grant = grant_of(user)
    assert grant is not None
    assert not grant.write
    assert grant.reaches(source, True)

    revoked = admin_client.post(
        KEYS, {"action": "revoke_keys", "_selected_action": [key.pk]}, follow=True
    )
    assert revoked.status_code == 200
    assert user_for_api_key(secret.group(0)) is None
    actions = set(
        AuditEvent.objects.filter(object_type="api_key", object_id=str(key.pk)).values_list(
            "action", flat=True
        )
    )
    assert actions == {"api_key.create", "api_key.revoke"}


def test_the_form_shows_why_a_key_is_refused_and_makes_none(
    admin_client: Client, source: str
) -> None:
    alice = User.objects.create(username=f"alice_{uuid.uuid4().hex[:6]}")
    before = ApiKey.objects.count()
    response = add(
        admin_client,
        user=alice.pk,
        label="x",
        access="read_write",
        collection_names=f"shared:{source}",
        expires_in_days=30,
    )
    assert "may not write the shared collection" in response.content.decode()  # type: ignore[attr-defined]
    response = add(
        admin_client,
        user=alice.pk,
        label="x",
        access="read",
        collection_names="not_in_the_allowlist",
        expires_in_days=30,
    )
    assert "not allowed for this tenant" in response.content.decode()  # type: ignore[attr-defined]
    assert ApiKey.objects.count() == before


def test_a_key_cannot_be_edited_or_deleted(admin_client: Client, source: str) -> None:
    add(
        admin_client,
        user=User.objects.create(username=f"alice_{uuid.uuid4().hex[:6]}").pk,
        label="fixed",
        access="read",
        collection_names=source,
        expires_in_days=1,
    )
    key = ApiKey.objects.get(label="fixed")
    page = admin_client.get(f"{KEYS}{key.pk}/change/").content.decode()
    assert 'name="label"' not in page
    assert admin_client.post(f"{KEYS}{key.pk}/delete/", {"post": "yes"}).status_code == 403
