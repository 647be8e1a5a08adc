"""django-tenants wiring: schema per tenant, routing by host, unknown host → 404."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_context

from tenants.models import Tenant
from tests.conftest import DemoTenant

pytestmark = pytest.mark.django_db(transaction=False)


def schema_tables(schema: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [schema]
        )
        return {row[0] for row in cursor.fetchall()}


def test_creating_a_tenant_creates_and_migrates_its_schema(
    demo_tenants: dict[str, DemoTenant],
) -> None:
    tenant = Tenant(schema_name="created_here", name="Created here")
    tenant.save()

    assert {"auth_user", "django_session", "django_admin_log"} <= schema_tables("created_here")
    connection.set_tenant(tenant)
    with connection.cursor() as cursor:
        # pgvector lives in public and is usable from the tenant's search path.
        cursor.execute("SELECT '[1,2,2]'::vector <=> '[2,4,4]'::vector")
        assert cursor.fetchone()[0] == pytest.approx(0.0)


@pytest.mark.parametrize("schema", ["acme", "globex"])
def test_tenant_host_reaches_its_own_schema(
    demo_tenants: dict[str, DemoTenant], schema: str
) -> None:
    response = Client().get("/health", HTTP_HOST=demo_tenants[schema].host)

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "schema": schema}


def test_tenant_admin_login_page_is_served_on_the_tenant_host(
    demo_tenants: dict[str, DemoTenant],
) -> None:
    response = Client().get("/admin/login/", HTTP_HOST="acme.localhost")

    assert response.status_code == 200


@pytest.mark.parametrize("host", ["nosuch.localhost", "acme.localhost.evil.localhost"])
def test_unknown_host_gets_404(demo_tenants: dict[str, DemoTenant], host: str) -> None:
    assert Client().get("/health", HTTP_HOST=host).status_code == 404


def test_users_live_in_their_tenant_schema(demo_tenants: dict[str, DemoTenant]) -> None:
    from tenants.services import user_ensure

    user_ensure(schema_name="acme", username="only_in_acme", password="pw-123456789")

    with connection.cursor() as cursor:
        cursor.execute("SELECT username FROM acme.auth_user WHERE username = 'only_in_acme'")
        assert cursor.fetchone() == ("only_in_acme",)
        cursor.execute("SELECT count(*) FROM globex.auth_user WHERE username = 'only_in_acme'")
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT count(*) FROM public.auth_user WHERE username = 'only_in_acme'")
        assert cursor.fetchone() == (0,)


def test_platform_admin_sees_tenants_only_on_the_public_host(
    demo_tenants: dict[str, DemoTenant],
) -> None:
    from tenants.services import user_ensure

    for schema in ("public", "acme"):
        user_ensure(schema_name=schema, username="boss", password="pw-123456789", is_admin=True)
    responses = {}
    for schema, host in (("public", "localhost"), ("acme", "acme.localhost")):
        client = Client(HTTP_HOST=host)
        # Client.login bypasses the tenant middleware: log in against the host's schema.
        with schema_context(schema):
            assert client.login(username="boss", password="pw-123456789")
        responses[schema] = client.get("/admin/tenants/tenant/").status_code

    # On a tenant host the registry does not exist at all.
    assert responses == {"public": 200, "acme": 404}
