"""What the job tests submit in-process (one small text job) and read back: job rows straight
from the database, and the runner's structured lines from the workers' logs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from django.contrib.auth.models import AbstractBaseUser
from psycopg.rows import dict_row

from portal.rag.jobs import job_submit
from portal.rag.services import NewDocument
from tenants.models import IngestJob

ENDED = ("succeeded", "failed", "cancelled")
TEXT = "Refunds are paid within thirty days of the request, by the same means of payment."


def text_job(user: AbstractBaseUser, source: str) -> IngestJob:
    """A queued job of one short document (:data:`TEXT`) into ``user``'s collection ``source``."""
    return job_submit(
        user=user,
        collection=source,
        documents=[NewDocument(content=TEXT, source="refunds.md", title="Refunds")],
        kind=IngestJob.Kind.DOCUMENT,
    )


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
