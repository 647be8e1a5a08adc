"""Fixtures shared by the whole suite: demo tenants, users and a real portal server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from portal.embedded_db import PROJECT_ROOT


@dataclass(frozen=True)
class DemoTenant:
    schema_name: str
    host: str


DEMO_TENANTS = (DemoTenant("acme", "acme.localhost"), DemoTenant("globex", "globex.localhost"))


@pytest.fixture(scope="session")
def demo_tenants(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest
) -> dict[str, DemoTenant]:
    """Create the public tenant and acme/globex once per test session (schemas are slow)."""
    from tenants.services import tenant_ensure

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        tenant_ensure(schema_name="public", name="Platform", domains=["localhost", "testserver"])
        for tenant in DEMO_TENANTS:
            tenant_ensure(
                schema_name=tenant.schema_name,
                name=tenant.schema_name.title(),
                domains=[tenant.host],
            )
    return {tenant.schema_name: tenant for tenant in DEMO_TENANTS}


@pytest.fixture(autouse=True)
def _public_schema_after_test() -> Iterator[None]:
    """Leave the connection on the public schema whatever a request switched it to."""
    yield
    from django.db import connection

    if hasattr(connection, "set_schema_to_public"):
        connection.set_schema_to_public()


DEMO_PASSWORD = "test-pass-2026"
DEMO_USERS = (
    ("acme", "admin", True),
    ("acme", "alice", False),
    ("acme", "bob", False),
    ("globex", "admin", True),
    ("globex", "carol", False),
)


@dataclass
class PortalServer:
    """The real portal, served by gunicorn on a loopback port over the test database."""

    port: int
    password: str
    database_url: str
    _tokens: dict[tuple[str, str], str]

    def url_for(self, host: str) -> str:
        """The base URL a browser would use for a tenant host (``*.localhost`` → loopback)."""
        return f"http://{host}:{self.port}"

    def client(self, host: str, token: str | None = None) -> httpx.Client:
        """An HTTP client that connects to 127.0.0.1 and sends ``Host: <host>:<port>``."""
        headers = {"Host": f"{host}:{self.port}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=60)

    def token(self, host: str, username: str) -> str:
        """Log in once per (host, user) and reuse the token (password hashing is slow)."""
        key = (host, username)
        if key not in self._tokens:
            with self.client(host) as client:
                response = client.post(
                    "/api/auth/login", json={"username": username, "password": self.password}
                )
            assert response.status_code == 200, response.text
            self._tokens[key] = response.json()["access_token"]
        return self._tokens[key]

    def api(self, host: str, username: str) -> httpx.Client:
        """A logged-in API client for ``username`` on ``host``."""
        return self.client(host, self.token(host, username))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _test_database_url() -> str:
    from django.db import connection
    from psycopg.conninfo import make_conninfo

    db = connection.settings_dict
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


@pytest.fixture(scope="session")
def portal_server(
    demo_tenants: dict[str, DemoTenant], django_db_blocker: pytest.FixtureRequest
) -> Iterator[PortalServer]:
    """Serve the portal from a separate gunicorn process, as in production.

    Users alice and bob (acme), carol (globex) and an ``admin`` per tenant exist with
    ``DEMO_PASSWORD``; the source ``docs`` is allowlisted in both tenants. The embedder is the
    deterministic fake (vector values don't matter for the API's behaviour).
    """
    from tenants.services import rag_source_set, user_ensure

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        for schema, username, is_admin in DEMO_USERS:
            user_ensure(
                schema_name=schema,
                username=username,
                password=DEMO_PASSWORD,
                email=f"{username}@{schema}.test",
                is_admin=is_admin,
            )
        for schema in ("acme", "globex"):
            rag_source_set(schema_name=schema, name="docs", enabled=True, actor="tests")
    url = _test_database_url()
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "RAG_EMBEDDER": "fake",
        "RAG_LOGIN_RATE": "1000/minute",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "test-secret-key-for-the-portal-server-fixture",
        "DJANGO_ALLOWED_HOSTS": "localhost,.localhost,127.0.0.1",
    }
    log = open(PROJECT_ROOT / ".data" / "portal-server-test.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi",
            "--workers",
            "2",
            "--threads",
            "4",
            "--bind",
            f"127.0.0.1:{port}",
            "--timeout",
            "120",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = PortalServer(port, DEMO_PASSWORD, url, {})
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"portal server exited; see {log.name}")
            try:
                with server.client("acme.localhost") as client:
                    if client.get("/health").status_code == 200:
                        break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"portal server did not start in 60 s; see {log.name}")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
