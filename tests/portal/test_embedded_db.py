"""The embedded PostgreSQL: started on demand without DATABASE_URL, reused across runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from portal import embedded_db
from portal.embedded_db import (
    MAX_SHARED_BUFFERS,
    MIN_SHARED_BUFFERS,
    PROJECT_ROOT,
    shared_buffers_bytes,
)

PROBE = """
import psycopg
from portal.embedded_db import database_url
url = database_url()
with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS probe (n int)")
    conn.execute("INSERT INTO probe VALUES (1)")
    rows = conn.execute("SELECT count(*) FROM probe").fetchone()[0]
    vector = conn.execute("SELECT '[3,4]'::vector <-> '[0,0]'::vector").fetchone()[0]
    buffers = conn.execute(
        "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"
    ).fetchone()[0]
print(url, rows, vector, buffers)
"""


def run_probe(pgdata: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["RAG_EMBEDDED_PGDATA"] = str(pgdata)
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.fixture
def pgdata(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # pgserver runs PostgreSQL as a separate system user when we are root: the folder must
    # be reachable by it, which pytest's private tmp folders are not.
    base = PROJECT_ROOT / ".data" / "test-embedded"
    base.mkdir(parents=True, exist_ok=True)
    path = base / tmp_path_factory.mktemp("pg").name
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def test_embedded_server_starts_without_database_url_and_has_pgvector(pgdata: Path) -> None:
    url, rows, distance, _ = run_probe(pgdata)
    assert url.startswith("postgresql://postgres:@/portal?host=")
    assert rows == "1"
    assert float(distance) == 5.0


def test_embedded_server_reuses_its_data_on_the_next_run(pgdata: Path) -> None:
    run_probe(pgdata)
    _, rows, _, _ = run_probe(pgdata)
    assert rows == "2"  # the first run's row survived a stop and a restart
    assert (pgdata / "PG_VERSION").exists()


def test_a_new_embedded_server_runs_with_shared_buffers_sized_to_the_machine(
    pgdata: Path,
) -> None:
    wanted = shared_buffers_bytes()
    assert MIN_SHARED_BUFFERS <= wanted <= MAX_SHARED_BUFFERS
    assert int(run_probe(pgdata)[3]) == wanted  # from its first start, not the next one
    assert int(run_probe(pgdata)[3]) == wanted


def test_shared_buffers_are_a_quarter_of_memory_within_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gib = 1024**3
    for memory, wanted in ((24 * gib, 2 * gib), (4 * gib, gib), (256 * 1024**2, 128 * 1024**2)):
        pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": memory // 4096}
        monkeypatch.setattr(embedded_db.os, "sysconf", pages.__getitem__)
        assert shared_buffers_bytes() == wanted


def test_database_url_prefers_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app@db.example/prod")
    assert embedded_db.database_url() == "postgresql://app@db.example/prod"
