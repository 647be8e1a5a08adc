"""``ragctl jobs``: the caller's ingestion jobs as a table (refreshed with ``--watch`` until
every listed job has ended), and ``jobs cancel ID`` / ``jobs retry ID``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rag_plugin.cli import output
from rag_plugin.cli.errors import ApiError
from rag_plugin.cli.job import Job, JobPage
from rag_plugin.cli.waiting import Pacer
from rag_plugin.exceptions import InvalidInputError

if TYPE_CHECKING:
    from rag_plugin.cli.client import RagClient
    from rag_plugin.cli.console import Console

__all__ = ["jobs"]

WATCH_SECONDS = 2.0
"""The longest wait between two refreshes of ``--watch``."""

_ERASE_LINES = "\x1b[{}F\x1b[J"  # up N lines to their start, then clear to the screen's end
_LIST_OPTIONS = ("state", "collection", "shared", "watch")


def jobs(args: argparse.Namespace, console: Console, client: RagClient) -> int:
    """List, watch, cancel or retry through ``client`` (logged in)."""
    if args.action is not None:
        return _act(args, console, client)
    if args.watch and args.json:
        raise InvalidInputError("--watch redraws a table; leave out --json")
    page = _list(args, client)
    if args.json:
        console.out(output.json_text(page.body))
        return 0
    lines = _table(page)
    for line in lines:
        console.out(line)
    if not args.watch:
        return 0
    pacer = Pacer(most=WATCH_SECONDS)
    while not all(job.ended for job in page.jobs) and pacer.wait():
        page = _list(args, client)
        fresh = _table(page)
        if fresh == lines:
            continue
        if console.stdout.isatty():
            console.stdout.write(_ERASE_LINES.format(len(lines)))
        else:
            console.out("")
        lines = fresh
        for line in lines:
            console.out(line)
    return 0


def _list(args: argparse.Namespace, client: RagClient) -> JobPage:
    try:
        return client.jobs(
            state=args.state,
            collection=args.collection,
            shared=True if args.shared else None,
            limit=args.limit,
        )
    except ApiError as exc:
        raise ApiError(f"listing jobs failed: {exc}") from exc


def _table(page: JobPage) -> list[str]:
    if not page.jobs:
        return ["no jobs"]
    footer = output.jobs_footer(len(page.jobs), page.total)
    return output.jobs_table(page.jobs) + ([footer] if footer else [])


def _act(args: argparse.Namespace, console: Console, client: RagClient) -> int:
    """``jobs cancel ID`` or ``jobs retry ID``: print the job's new state."""
    if not args.job_id or not args.job_id.strip():
        raise InvalidInputError(f"jobs {args.action} needs the job's ID")
    given = [f"--{name}" for name in _LIST_OPTIONS if getattr(args, name)]
    if given:
        raise InvalidInputError(f"{', '.join(given)} only go with listing jobs, not {args.action}")
    job_id = args.job_id.strip()
    act = client.cancel_job if args.action == "cancel" else client.retry_job
    verb = "cancelling" if args.action == "cancel" else "retrying"
    try:
        job: Job = act(job_id)
    except ApiError as exc:
        raise ApiError(f"{verb} job {job_id} failed: {exc}") from exc
    console.out(output.json_text(job.body) if args.json else output.job_state_line(job))
    return 0
