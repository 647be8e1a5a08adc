"""``manage.py bootstrap_demo``: idempotently create the demo tenants, users and documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django_tenants.utils import get_public_schema_name, schema_context

from tenants.services import rag_source_set, tenant_ensure, user_ensure

DEFAULT_PASSWORD = "demo-pass-2026"  # noqa: S105 - a documented demo password, printed on use
DEMO_DOCS_DIR = Path(__file__).resolve().parents[2] / "demo_docs"

# (schema, display name, host, users as (username, is_admin))
DEMO_TENANTS: tuple[tuple[str, str, str, tuple[tuple[str, bool], ...]], ...] = (
    (
        "acme",
        "Acme Corporation",
        "acme.localhost",
        (("admin", True), ("alice", False), ("bob", False)),
    ),
    ("globex", "Globex Corporation", "globex.localhost", (("admin", True), ("carol", False))),
)
PUBLIC_HOSTS = ["localhost", "127.0.0.1"]
DEMO_SOURCE = "docs"


class Command(BaseCommand):
    help = "Create the demo tenants (acme, globex), their users and the demo document set."

    def _ingest_demo_documents(self) -> list[str]:
        """Ingest the demo documents into alice's ``docs`` (re-runs replace them by source)."""
        from portal.rag.services import document_ingest

        lines = []
        with schema_context("acme"):
            alice = get_user_model().objects.get(username="alice")
            for path in sorted(p for p in DEMO_DOCS_DIR.iterdir() if p.is_file()):
                text = path.read_text(encoding="utf-8")
                title = next(
                    (line[2:].strip() for line in text.splitlines() if line.startswith("# ")),
                    path.stem.replace("-", " "),
                )
                ingested = document_ingest(
                    user=alice, collection=DEMO_SOURCE, content=text, title=title, source=path.name
                )
                lines.append(
                    f"ingested {path.name} into alice's '{DEMO_SOURCE}' "
                    f"({len(ingested.result.chunks)} chunks)"
                )
        return lines

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--password",
            default=DEFAULT_PASSWORD,
            help=f"Password for every demo user (default: {DEFAULT_PASSWORD}).",
        )
        parser.add_argument(
            "--port", type=int, default=8000, help="Port printed in the tenant URLs."
        )

    def handle(self, *args: Any, password: str, port: int, **options: Any) -> None:
        if not password:
            self.stderr.write("--password must not be empty")
            raise SystemExit(2)
        lines = []
        _, outcome = tenant_ensure(
            schema_name=get_public_schema_name(), name="Platform", domains=PUBLIC_HOSTS
        )
        lines.append(outcome.describe())
        lines.append(
            user_ensure(
                schema_name=get_public_schema_name(),
                username="admin",
                password=password,
                is_admin=True,
            ).describe()
        )
        for schema, name, host, users in DEMO_TENANTS:
            _, outcome = tenant_ensure(schema_name=schema, name=name, domains=[host])
            lines.append(outcome.describe())
            for username, is_admin in users:
                outcome = user_ensure(
                    schema_name=schema,
                    username=username,
                    password=password,
                    email=f"{username}@{host}",
                    is_admin=is_admin,
                )
                lines.append(outcome.describe())
        for schema, *_ in DEMO_TENANTS:
            lines.append(
                rag_source_set(
                    schema_name=schema, name=DEMO_SOURCE, enabled=True, actor="bootstrap_demo"
                ).describe()
            )
        lines.extend(self._ingest_demo_documents())

        self.stdout.write("\n".join(lines))
        self.stdout.write("")
        self.stdout.write(f"Platform admin: http://localhost:{port}/admin/  (admin / {password})")
        for schema, _, host, users in DEMO_TENANTS:
            names = ", ".join(username for username, _ in users)
            admins = ", ".join(username for username, is_admin in users if is_admin)
            self.stdout.write(
                f"Tenant {schema}: workspace http://{host}:{port}/  ({names}); "
                f"admin http://{host}:{port}/admin/  ({admins}); password {password}"
            )
