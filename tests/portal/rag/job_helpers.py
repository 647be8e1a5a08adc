"""What the job tests read back: job rows straight from the database, and the runner's
structured lines from the workers' logs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

ENDED = ("succeeded", "failed", "cancelled")


def job_rows(dsn: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The acme jobs ``ids`` by id: state, stage, attempts, results, error code."""
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT id::text, state, stage, attempts, results, error_code "
            "FROM acme.tenants_ingestjob WHERE id = ANY(%s::uuid[])",
            (ids,),
        )
        return {row["id"]: row for row in cur.fetchall()}


def all_ended(rows: dict[str, dict[str, Any]]) -> bool:
    return all(row["state"] in ENDED for row in rows.values())


def job_events(logs: Iterable[Path]) -> list[dict[str, Any]]:
    """The job runner's lines (started, retry, succeeded...) in the workers' logs."""
    events = []
    for log in logs:
        for line in log.read_text().splitlines():
            if line.startswith("{") and '"rag.job_' in line:
                event = json.loads(line)
                if "job" in event:  # not the sweeper's lines, which name queue entries
                    events.append(event)
    return events
