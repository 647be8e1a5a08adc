"""``manage.py bootstrap_demo``: idempotently create the demo tenants, users and documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django_tenants.utils import get_public_schema_name

from tenants.services import tenant_ensure, user_ensure

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


class Command(BaseCommand):
    help = "Create the demo tenants (acme, globex), their users and the demo document set."

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
        documents = sorted(p.name for p in DEMO_DOCS_DIR.iterdir() if p.is_file())
        lines.append(f"demo documents in {DEMO_DOCS_DIR}: {', '.join(documents)}")

        self.stdout.write("\n".join(lines))
        self.stdout.write("")
        self.stdout.write(f"Platform admin: http://localhost:{port}/admin/  (admin / {password})")
        for schema, _, host, users in DEMO_TENANTS:
            names = ", ".join(username for username, _ in users)
            self.stdout.write(
                f"Tenant {schema}: http://{host}:{port}/admin/  users {names}, password {password}"
            )
