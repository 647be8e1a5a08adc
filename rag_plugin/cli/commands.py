"""The ``ragctl`` commands once their arguments are parsed (``options.py``): the ingest-dir,
search and collections flows, and the dispatch to them (sending ingest-dir's documents and
waiting for their jobs is ``sending.py``, the chat ``chat.py``, the jobs command ``jobs.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_plugin.cli import output
from rag_plugin.cli.chat import chat as chat_flow
from rag_plugin.cli.client import ApiError, RagClient, normalize_host
from rag_plugin.cli.console import CommandError, Console
from rag_plugin.cli.discovery import Discovery, discover
from rag_plugin.cli.jobs import jobs as jobs_flow
from rag_plugin.cli.options import DEFAULT_HOST, HOST_ENV, TOKEN_ENV
from rag_plugin.cli.sending import Interrupted, Sent, document_json, send_documents
from rag_plugin.exceptions import RagError

__all__ = ["dispatch"]


def dispatch(args: argparse.Namespace, console: Console) -> int:
    """Run the parsed command; 0 on success, 1 on failure, 130 when interrupted."""
    handlers: dict[str, Callable[[argparse.Namespace, Console], int]] = {
        "ingest-dir": ingest_dir,
        "search": search,
        "collections": collections,
        "chat": chat,
        "jobs": jobs,
    }
    try:
        return handlers[args.command](args, console)
    except RagError as exc:
        console.err(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        console.err("error: interrupted")
        return 130


def _pairs(pairs: Sequence[tuple[str, Any]], option: str) -> dict[str, Any]:
    """The ``KEY=VALUE`` options as a mapping; a key given twice with two values is refused."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found and found[key] != value:
            raise CommandError(f"{option} {key} is given twice, as {found[key]!r} and {value!r}")
        found[key] = value
    return found


def ingest_dir(args: argparse.Namespace, console: Console) -> int:
    """Ingest every supported file under ``--docs-path``; fails closed before any write."""
    host = _host(args, console)
    collection = _non_empty(args.collection, "--collection")
    discovery = discover(args.docs_path, max_upload_bytes=args.max_upload_bytes)
    for item in discovery.skipped:
        console.err(output.skipped_line(item.path, item.reason))
    if not discovery.documents:
        raise CommandError(f"no ingestible documents found under {args.docs_path}")
    if args.dry_run:
        _report_dry_run(discovery, args.json, console)
        return 0

    metadata = _pairs(args.metadata, "--metadata")
    show_bar = not args.json and console.stderr.isatty()
    with _signed_in(host, args, console) as client:
        try:
            sent = send_documents(
                client,
                collection,
                discovery.documents,
                tags=args.tags,
                chunking_strategy=args.chunking_strategy,
                metadata=metadata,
                batch_size=args.batch_size,
                wait=not args.no_wait,
                wait_timeout=args.wait_timeout,
                progress=console.stderr if show_bar else None,
            )
        except Interrupted as stop:
            ids = ", ".join(job["job_id"] for job in stop.sent.pending)
            if ids:
                console.err(f"these jobs go on in the portal (`ragctl jobs` shows them): {ids}")
            raise
    return _report_ingest(discovery, sent, args, console)


def _report_ingest(
    discovery: Discovery, sent: Sent, args: argparse.Namespace, console: Console
) -> int:
    """A line per document, the jobs not waited for, the summary; non-zero when a document
    failed or a job has not ended."""
    outcomes = sent.outcomes
    failed = sum(1 for outcome in outcomes if outcome["status"] == "failed")
    succeeded = sum(1 for outcome in outcomes if outcome["status"] == "ingested")
    unchanged = sum(1 for outcome in outcomes if outcome.get("unchanged") is True)
    pending = len(outcomes) - failed - succeeded
    chunks = sum(outcome.get("chunks", 0) for outcome in outcomes)
    if args.json:
        summary = {
            "documents": len(outcomes),
            "succeeded": succeeded,
            "failed": failed,
            "pending": pending,
            "chunks": chunks,
            "unchanged": unchanged,
        }
        report = _discovery_json(discovery, False, outcomes, summary)
        console.out(output.json_text({**report, "jobs": sent.jobs}))
    else:
        for outcome in outcomes:
            path = Path(outcome["path"])
            if outcome["status"] == "ingested":
                line = output.ingested_line(
                    path,
                    outcome["chunks"],
                    unchanged=outcome.get("unchanged") is True,
                    needs_ocr_pages=outcome.get("needs_ocr_pages") or (),
                )
                console.out(line)
            elif outcome["status"] == "failed":
                console.err(output.failed_line(path, output.failure(outcome)))
        if args.no_wait:
            for job in sent.pending:
                console.out(output.job_line(job["job_id"], job["documents"]))
        console.out(
            output.summary_line(len(outcomes), succeeded, failed, chunks, pending, unchanged)
        )
    problems = [f"{failed} document(s) failed ingestion"] if failed else []
    if sent.pending and not args.no_wait:
        waiting = ", ".join(f"{job['job_id']} ({job['state']})" for job in sent.pending)
        problems.append(
            f"{len(sent.pending)} job(s) had not ended after --wait-timeout "
            f"{args.wait_timeout:g} seconds and go on in the portal: {waiting}; "
            "`ragctl jobs` shows them"
        )
    if problems:
        raise CommandError("; ".join(problems))
    return 0


def search(args: argparse.Namespace, console: Console) -> int:
    """Search one collection and print ranked results (or the server's JSON)."""
    host = _host(args, console)
    collection = _non_empty(args.collection, "--collection")
    query = _non_empty(args.query, "--query")
    with _signed_in(host, args, console) as client:
        try:
            response = client.search(
                collection=collection,
                query=query,
                limit=args.top_k,
                strategy=args.strategy,
                filters=_pairs(args.filters, "--filter"),
                rerank=args.rerank,
            )
        except ApiError as exc:
            raise CommandError(f"search failed: {exc}") from exc
    if args.json:
        console.out(output.json_text(response))
    else:
        for line in output.search_lines(response, query):
            console.out(line)
    return 0


def chat(args: argparse.Namespace, console: Console) -> int:
    """A conversation with a profile's or collections' documents (``rag_plugin.cli.chat``)."""
    with _signed_in(_host(args, console), args, console) as client:
        return chat_flow(args, console, client)


def jobs(args: argparse.Namespace, console: Console) -> int:
    """List, watch, cancel or retry ingestion jobs (``rag_plugin.cli.jobs``)."""
    with _signed_in(_host(args, console), args, console) as client:
        return jobs_flow(args, console, client)


def collections(args: argparse.Namespace, console: Console) -> int:
    """List the caller's collections with their counts."""
    host = _host(args, console)
    with _signed_in(host, args, console) as client:
        try:
            listed = client.collections()
        except ApiError as exc:
            raise CommandError(f"listing collections failed: {exc}") from exc
    if args.json:
        console.out(output.json_text(listed))
    else:
        for item in listed:
            console.out(output.collection_line(item))
    return 0


@contextmanager
def _signed_in(host: str, args: argparse.Namespace, console: Console) -> Iterator[RagClient]:
    """A client of ``host`` holding the caller's token (see :func:`_token`), closed after."""
    with RagClient(host, timeout=args.timeout, transport=console.transport) as client:
        client.use_token(_token(args, console, client))
        yield client


def _token(args: argparse.Namespace, console: Console, client: RagClient) -> str:
    """--token, else $RAG_TOKEN (unless --user/--password were given), else a login."""
    if args.token:
        return str(args.token)
    if args.user is None and args.password is None:
        from_env = console.environ.get(TOKEN_ENV, "").strip()
        if from_env:
            return from_env
    if not args.user:
        raise CommandError(f"--user is required unless --token is provided or ${TOKEN_ENV} is set")
    password = args.password
    if password is None:
        if console.prompt is None:
            raise CommandError("--password is required unless --token is provided")
        password = console.prompt(f"Password for {args.user}: ")
    try:
        return client.login(args.user, password)
    except ApiError as exc:
        raise CommandError(f"login failed: {exc}") from exc


def _report_dry_run(discovery: Discovery, as_json: bool, console: Console) -> None:
    if as_json:
        summary = {"documents": len(discovery.documents)}
        console.out(output.json_text(_discovery_json(discovery, True, None, summary)))
        return
    for document in discovery.documents:
        console.out(output.dry_run_line(document))
    console.out(output.dry_run_summary(len(discovery.documents)))


def _discovery_json(
    discovery: Discovery,
    dry_run: bool,
    outcomes: list[dict[str, Any]] | None,
    summary: dict[str, int],
) -> dict[str, Any]:
    documents = outcomes if outcomes is not None else list(map(document_json, discovery.documents))
    return {
        "dry_run": dry_run,
        "documents": documents,
        "skipped": [{"path": str(item.path), "reason": item.reason} for item in discovery.skipped],
        "empty": [str(path) for path in discovery.empty],
        "summary": summary,
    }


def _host(args: argparse.Namespace, console: Console) -> str:
    return normalize_host(args.host or console.environ.get(HOST_ENV) or DEFAULT_HOST)


def _non_empty(value: str, flag: str) -> str:
    if not value.strip():
        raise CommandError(f"{flag} must not be empty")
    return value
