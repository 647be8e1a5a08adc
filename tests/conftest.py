"""Fixtures shared by the whole suite: demo tenants, users and a real portal server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from portal import launch
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


@pytest.fixture(scope="module")
def rag_pool_closed_after() -> Iterator[None]:
    """For a module of in-process tests that reach the RAG store: the store's own pool opens
    on the test database, so close it (and forget the stores and caches that use it) after
    the module, or the database could not be dropped when the session ends."""
    yield
    from portal.rag import runtime

    runtime.pool().close()
    runtime.pool.cache_clear()
    runtime.backend_store.cache_clear()  # its tenants' stores used that pool
    runtime._stores.clear()
    runtime._caches.clear()


DEMO_PASSWORD = "test-pass-2026"
METRICS_TOKEN = "metrics-test-token"


@dataclass
class PortalServer:
    """The real portal, served by gunicorn on a loopback port over its own database.

    The database is made like production's (see :mod:`portal.launch`), not by pytest-django,
    so the server sees exactly what the tests commit.
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
        return launch.client(self.port, host, token)

    def token(self, host: str, username: str) -> str:
        """Log in once per (host, user) and reuse the token (password hashing is slow)."""
        key = (host, username)
        if key not in self._tokens:
            self._tokens[key] = launch.login(self.port, host, username, self.password)
        return self._tokens[key]

    def api(self, host: str, username: str) -> httpx.Client:
        """A logged-in API client for ``username`` on ``host``."""
        return self.client(host, self.token(host, username))

    def set_source(self, schema: str, name: str, enabled: bool) -> None:
        """Create or update an allowlist entry, as a tenant admin's form would store it."""
        launch.set_source(self.database_url, schema, name, enabled)

    def new_source(self) -> str:
        """A fresh collection name allowlisted in acme and globex."""
        name = f"src_{uuid.uuid4().hex[:10]}"
        for schema in ("acme", "globex"):
            self.set_source(schema, name, True)
        return name


# The longest modules, run first: with two test processes (make test) the module that starts
# last decides when the run ends, so none of these may be left for the end.
SLOW_FIRST = (
    "tests/portal/api/test_schema_fuzz.py",
    "tests/portal/rag/test_job_durability.py",
    "tests/rag_plugin/stores/postgres/test_differential.py",
    "tests/rag_plugin/stores/qdrant/test_differential.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A stable sort: each module keeps its tests together and in their order.
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in SLOW_FIRST)


LLM_REPLY = "Hybrid search fuses rankings [1]. It also uses BM25 [2]."
# The servers' logs; under pytest-xdist each worker starts its own servers, so its own folder.
LOGS = PROJECT_ROOT / ".data" / os.environ.get("PYTEST_XDIST_WORKER", "")
LOGS.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLMServer]:
    """An OpenAI-compatible chat server on loopback with canned replies (the deployment's LLM)."""
    with fake_llm_server(LLM_REPLY) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_portal_server(fake_llm: FakeLLMServer) -> Iterator[PortalServer]:
    """Serve the portal from a separate gunicorn process on a database of its own.

    ``bootstrap_demo`` makes tenants acme (admin, alice, bob) and globex (admin, carol) with
    ``DEMO_PASSWORD`` and allowlists the source ``docs``. The embedder is the deterministic fake
    (vector values don't matter for the API's behaviour); the LLM is ``fake_llm``.
    """
    with launch.scratch_database("test_portal_live") as url:
        env = launch.portal_env(
            url,
            RAG_EMBEDDER="fake",
            RAG_LOGIN_RATE="1000/minute",
            RAG_LOGIN_ACCOUNT_FAILURES="1000",
            RAG_LLM_URL=fake_llm.api_base,
            RAG_LLM_MODEL="fake-chat",
            RAG_METRICS_TOKEN=METRICS_TOKEN,
        )
        launch.prepare(env, DEMO_PASSWORD)
        with launch.gunicorn(env, LOGS / "portal-server-test.log") as port:
            yield PortalServer(port, DEMO_PASSWORD, url, {}, env)


@pytest.fixture(scope="session")
def portal_server(postgres_portal_server: PortalServer) -> PortalServer:
    """The portal as deployed by default: RAG data in PostgreSQL."""
    return postgres_portal_server


@pytest.fixture(scope="session")
def qdrant_portal_server(
    postgres_portal_server: PortalServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PortalServer]:
    """A second server on the same database (tenants, users, allowlists) with
    ``RAG_STORE=qdrant``: RAG data in Qdrant's local mode, a folder that one process owns, so
    one gunicorn worker (with its threads)."""
    folder = tmp_path_factory.mktemp("qdrant") / "portal"
    env = {**postgres_portal_server.env, "RAG_STORE": "qdrant", "RAG_QDRANT_PATH": str(folder)}
    with launch.gunicorn(env, LOGS / "portal-server-qdrant-test.log", workers=1) as port:
        yield PortalServer(
            port, postgres_portal_server.password, postgres_portal_server.database_url, {}, env
        )


@pytest.fixture(scope="session")
def portal_server_without_llm(portal_server: PortalServer) -> Iterator[PortalServer]:
    """A second server on the same database, deployed with no LLM configured."""
    env = {k: v for k, v in portal_server.env.items() if not k.startswith("RAG_LLM_")}
    with launch.gunicorn(env, LOGS / "portal-server-no-llm-test.log") as port:
        yield PortalServer(port, portal_server.password, portal_server.database_url, {}, env)
