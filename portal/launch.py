"""Throwaway portals for tests, benchmarks and smoke checks: own database, real gunicorn.

A scratch database on the embedded (or configured) PostgreSQL is prepared exactly as a
deployment is (``migrate_schemas``, ``createcachetable``, ``bootstrap_demo`` in subprocesses)
and served by gunicorn on a free loopback port. Nothing here imports Django, so the callers
stay free to configure their own process as they like.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from portal.embedded_db import PROJECT_ROOT, database_url


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """Create ``<prefix>_<pid>`` next to the main database; drop it when the block ends."""
    base: dict[str, Any] = dict(conninfo_to_dict(database_url()))
    name = f"{prefix}_{os.getpid()}"
    admin = make_conninfo(**{**base, "dbname": "postgres"})
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(**{**base, "dbname": name})
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(drop)


def portal_env(database: str, **overrides: str) -> dict[str, str]:
    """The environment of a production-like portal process on ``database``: its processes
    (gunicorn's workers, ingestion workers) count their metrics into one fresh folder."""
    return {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="rag-metrics-"),
        "DATABASE_URL": database,
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": f"throwaway-{os.getpid()}-{time.monotonic_ns()}",
        "DJANGO_ALLOWED_HOSTS": "localhost,.localhost,127.0.0.1",
        **overrides,
    }


def manage(env: Mapping[str, str], *args: str) -> None:
    """Run ``manage.py`` with ``env``; raise with its output if it fails."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}{result.stderr}")


def prepare(env: Mapping[str, str], password: str) -> None:
    """Migrate every schema and create the demo tenants, users and allowlist entries."""
    manage(env, "migrate_schemas", "--verbosity", "0")
    manage(env, "createcachetable")
    manage(env, "bootstrap_demo", "--password", password)


def set_source(database: str, schema: str, name: str, enabled: bool) -> None:
    """Create or update an allowlist entry directly, as the tenant admin's form stores it."""
    query = sql.SQL(
        "INSERT INTO {}.tenants_ragsource "
        "(name, enabled, note, created_at, created_by, updated_at, updated_by) "
        "VALUES (%s, %s, '', now(), 'launch', now(), 'launch') "
        "ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()"
    ).format(sql.Identifier(schema))
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(query, (name, enabled))


@contextmanager
def gunicorn(
    env: Mapping[str, str], log_path: Path, *, workers: int = 2, threads: int = 4
) -> Iterator[int]:
    """Serve the portal under gunicorn on a free loopback port until the block ends."""
    port = free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "gunicorn", "portal.wsgi", "--workers", str(workers)]
    command += ["--threads", str(threads), "--bind", f"127.0.0.1:{port}", "--timeout", "300"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_healthy(process, port, log_path)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextmanager
def worker(
    env: Mapping[str, str], log_path: Path, *, concurrency: int = 1
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``manage.py rag_worker`` (the ingestion worker) until the block ends; the caller
    may kill the process it is given (the block then only reaps it)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "manage.py", "rag_worker", "--concurrency", str(concurrency)]
    with open(log_path, "a") as log:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + 90
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
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"portal server did not start in 90 s; see {log_path}")
        time.sleep(0.2)


def client(port: int, host: str, token: str | None = None, timeout: float = 60) -> httpx.Client:
    """An HTTP client that connects to 127.0.0.1 and sends ``Host: <host>:<port>``."""
    headers = {"Host": f"{host}:{port}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=timeout)


def login(port: int, host: str, username: str, password: str) -> str:
    """Log in through the API and return the bearer token."""
    with client(port, host) as http:
        response = http.post("/api/auth/login", json={"username": username, "password": password})
    response.raise_for_status()
    return str(response.json()["access_token"])
