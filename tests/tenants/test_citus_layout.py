"""A tenant's schema as one Citus distributed schema (README "Scale-out"): Django's tenant
tables stay inside it, as the store's do (tests/rag_plugin/stores/postgres/test_citus_layout.py).

Schema-based sharding puts each tenant schema, whole, on one node; the public schema (tenants,
domains, the job queue) stays on the coordinator. That holds while no foreign key joins a
tenant's tables to another schema's, and no tenant table takes its ids from a sequence
outside its schema.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import DemoTenant

pytestmark = pytest.mark.django_db(transaction=False)


def test_no_foreign_key_joins_a_tenant_schema_to_another(
    demo_tenants: dict[str, DemoTenant],
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT k.conname, src.nspname, s.relname, dst.nspname, d.relname
              FROM pg_constraint k
              JOIN pg_class s ON s.oid = k.conrelid
              JOIN pg_namespace src ON src.oid = s.relnamespace
              JOIN pg_class d ON d.oid = k.confrelid
              JOIN pg_namespace dst ON dst.oid = d.relnamespace
             WHERE k.contype = 'f' AND src.nspname <> dst.nspname
            """
        )
        crossing = cursor.fetchall()
        cursor.execute(
            "SELECT count(*) FROM pg_constraint k JOIN pg_class s ON s.oid = k.conrelid"
            " JOIN pg_namespace n ON n.oid = s.relnamespace"
            " WHERE k.contype = 'f' AND n.nspname = 'acme'"
        )
        (inside,) = cursor.fetchone()
    assert crossing == []
    assert inside >= 10  # users, groups, jobs, files, keys, marks...: all within the schema


def test_a_tenants_sequences_are_its_own(demo_tenants: dict[str, DemoTenant]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.relname, q.relname, qn.nspname
              FROM pg_depend d
              JOIN pg_class q ON q.oid = d.objid AND q.relkind = 'S'
              JOIN pg_namespace qn ON qn.oid = q.relnamespace
              JOIN pg_class t ON t.oid = d.refobjid
              JOIN pg_namespace tn ON tn.oid = t.relnamespace
             WHERE tn.nspname = 'acme' AND d.deptype IN ('a', 'i')
            """
        )
        owned = cursor.fetchall()
    assert owned, "the tenant's tables own identity or serial sequences"
    assert {schema for _, _, schema in owned} == {"acme"}
