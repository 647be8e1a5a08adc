"""Fixtures shared by the whole suite: demo tenants, users and a real portal server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from portal.embedded_db import PROJECT_ROOT
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer, fake_llm_server


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


@dataclass
class PortalServer:
    """The real portal, served by gunicorn on a loopback port over its own database.

    The database is made like production's (``migrate_schemas`` + ``bootstrap_demo`` in
    subprocesses), not by pytest-django, so the server sees exactly what the tests commit.
    """

    port: int
    password: str
    database_url: str
    _tokens: dict[tuple[str, str], str]
    env: dict[str, str]

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

    def set_source(self, schema: str, name: str, enabled: bool) -> None:
        """Create or update an allowlist entry, as a tenant admin's form would store it."""
        query = sql.SQL(
            "INSERT INTO {}.tenants_ragsource "
            "(name, enabled, note, created_at, created_by, updated_at, updated_by) "
            "VALUES (%s, %s, '', now(), 'tests', now(), 'tests') "
            "ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()"
        ).format(sql.Identifier(schema))
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            conn.execute(query, (name, enabled))

    def new_source(self) -> str:
        """A fresh collection name allowlisted in acme and globex."""
        name = f"src_{uuid.uuid4().hex[:10]}"
        for schema in ("acme", "globex"):
            self.set_source(schema, name, True)
        return name


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )


@contextmanager
def _gunicorn(env: dict[str, str], name: str) -> Iterator[int]:
    """Run the portal under gunicorn on a free loopback port until the block ends."""
    port = _free_port()
    log_path = PROJECT_ROOT / ".data" / f"{name}.log"
    with open(log_path, "w") as log:
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
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"portal server exited; see {log_path}")
                try:
                    response = httpx.get(
                        f"http://127.0.0.1:{port}/health",
                        headers={"Host": f"acme.localhost:{port}"},
                        timeout=5,
                    )
                    if response.status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"portal server did not start in 60 s; see {log_path}")
                time.sleep(0.2)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


LLM_REPLY = "Hybrid search fuses rankings [1]. It also uses BM25 [2]."


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLMServer]:
    """An OpenAI-compatible chat server on loopback with canned replies (the deployment's LLM)."""
    with fake_llm_server(LLM_REPLY) as server:
        yield server


@pytest.fixture(scope="session")
def portal_server(fake_llm: FakeLLMServer) -> Iterator[PortalServer]:
    """Serve the portal from a separate gunicorn process on a database of its own.

    ``bootstrap_demo`` makes tenants acme (admin, alice, bob) and globex (admin, carol) with
    ``DEMO_PASSWORD`` and allowlists the source ``docs``. The embedder is the deterministic fake
    (vector values don't matter for the API's behaviour); the LLM is ``fake_llm``.
    """
    from portal.embedded_db import database_url

    base = conninfo_to_dict(database_url())
    name = f"test_portal_live_{os.getpid()}"
    admin_url = make_conninfo(**{**base, "dbname": "postgres"})
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = make_conninfo(**{**base, "dbname": name})
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "RAG_EMBEDDER": "fake",
        "RAG_LOGIN_RATE": "1000/minute",
        "RAG_LLM_URL": fake_llm.api_base,
        "RAG_LLM_MODEL": "fake-chat",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "test-secret-key-for-the-portal-server-fixture",
        "DJANGO_ALLOWED_HOSTS": "localhost,.localhost,127.0.0.1",
    }
    try:
        _manage(env, "migrate_schemas", "--verbosity", "0")
        _manage(env, "createcachetable")
        _manage(env, "bootstrap_demo", "--password", DEMO_PASSWORD)
        with _gunicorn(env, "portal-server-test") as port:
            yield PortalServer(port, DEMO_PASSWORD, url, {}, env)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def portal_server_without_llm(portal_server: PortalServer) -> Iterator[PortalServer]:
    """A second server on the same database, deployed with no LLM configured."""
    env = {k: v for k, v in portal_server.env.items() if not k.startswith("RAG_LLM_")}
    with _gunicorn(env, "portal-server-no-llm-test") as port:
        yield PortalServer(port, portal_server.password, portal_server.database_url, {}, env)
