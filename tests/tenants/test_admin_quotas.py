"""Quotas in the admins (SPEC O7): the platform admin sets a tenant's limits and sees its
usage; a tenant admin sets users' limits within the tenant's, recorded in the audit log."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_tenants.utils import schema_context

from tenants.models import AuditEvent, Tenant, UserQuota

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after"),
]

ACME = "acme.localhost"
QUOTAS = "/admin/tenants/userquota/"


@pytest.fixture
def tenant_limit(acme: None) -> Iterator[Tenant]:
    with schema_context("public"):
        tenant = Tenant.objects.get(schema_name="acme")
        tenant.max_documents = 100
        tenant.save(update_fields=["max_documents"])
    yield tenant
    with schema_context("public"):
        Tenant.objects.filter(pk=tenant.pk).update(max_documents=None)


@pytest.fixture
def admin_client(acme: None) -> Client:
    user = User.objects.create(username=f"q_admin_{uuid.uuid4().hex[:6]}", is_staff=True)
    user.is_superuser = True
    user.save()
    client = Client(HTTP_HOST=ACME)
    client.force_login(user)
    return client


def test_a_users_limit_must_fit_in_the_tenants_and_is_audited(
    admin_client: Client, tenant_limit: Tenant
) -> None:
    user = User.objects.create(username=f"quota_{uuid.uuid4().hex[:6]}")
    over = admin_client.post(f"{QUOTAS}add/", {"user": user.pk, "max_documents": 101})
    assert over.status_code == 200
    assert "The tenant may keep at most 100" in over.content.decode()
    unset = admin_client.post(f"{QUOTAS}add/", {"user": user.pk})
    assert "The tenant may keep at most 100" in unset.content.decode()
    assert not UserQuota.objects.filter(user=user).exists()

    saved = admin_client.post(f"{QUOTAS}add/", {"user": user.pk, "max_documents": 5})
    assert saved.status_code == 302
    assert UserQuota.objects.get(user=user).max_documents == 5
    (event,) = AuditEvent.objects.filter(action="userquota.create", object_id=str(user.pk))
    assert event.after is not None
    assert event.after["max_documents"] == 5

    listing = admin_client.get(QUOTAS).content.decode()
    assert "This tenant keeps" in listing
    assert "/ 100 documents" in listing
    assert "0 / 5 documents" in listing


def test_the_platform_admin_sets_and_sees_a_tenants_limits() -> None:
    from tenants.services import user_ensure

    user_ensure(schema_name="public", username="root_q", password="pw-123456789", is_admin=True)
    client = Client(HTTP_HOST="localhost")
    with schema_context("public"):
        assert client.login(username="root_q", password="pw-123456789")
        tenant = Tenant.objects.get(schema_name="acme")
    page = client.get(f"/admin/tenants/tenant/{tenant.pk}/change/").content.decode()
    assert 'name="max_chunks"' in page
    assert "no limit chunks" in page


def test_a_change_of_a_tenants_limits_is_in_the_tenants_audit_log() -> None:
    from django.test import RequestFactory

    from tenants.admin import platform_admin_site
    from tenants.services import user_ensure

    user_ensure(schema_name="public", username="root_l", password="pw-123456789", is_admin=True)
    request = RequestFactory().post("/admin/")
    with schema_context("public"):
        request.user = User.objects.get(username="root_l")
        tenant = Tenant.objects.get(schema_name="acme")
        tenant.max_chunks = 500
        try:
            platform_admin_site._registry[Tenant].save_model(request, tenant, None, True)
        finally:
            Tenant.objects.filter(pk=tenant.pk).update(max_chunks=None)
    with schema_context("acme"):
        event = AuditEvent.objects.filter(action="tenant.limits_update").latest("id")
    assert (event.actor_name, event.actor_id, event.object_id) == ("platform:root_l", None, "acme")
    assert event.before is not None
    assert event.after is not None
    assert (event.before["max_chunks"], event.after["max_chunks"]) == (None, 500)
