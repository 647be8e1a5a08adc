"""Sending ``ragctl ingest-dir``'s documents: in batches through ``/api/rag/ingest/batch``,
one request per document when a batch fails (or the server has no batch route), with a
progress bar on a terminal and an outcome per document."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from tqdm import tqdm

from rag_plugin.cli import output
from rag_plugin.cli.client import (
    ApiError,
    IngestResult,
    RagClient,
    document_fields,
    encoded_size,
)
from rag_plugin.cli.discovery import Document

if TYPE_CHECKING:
    from rag_plugin.cli.commands import Console

__all__ = ["MAX_BATCH_BYTES", "document_json", "plan_batches", "send_documents"]

MAX_BATCH_BYTES = 1024 * 1024
"""JSON bytes of documents per batch request: half the portal's default 2 MiB body limit."""


def plan_batches(
    documents: Sequence[Document],
    *,
    max_documents: int,
    max_bytes: int,
    size: Callable[[Document], int],
) -> list[tuple[Document, ...]]:
    """Consecutive groups of at most ``max_documents`` and ``max_bytes`` (by ``size``), in order.

    A document bigger than ``max_bytes`` on its own makes a group of one.
    """
    batches: list[tuple[Document, ...]] = []
    current: list[Document] = []
    current_bytes = 0
    for document in documents:
        document_bytes = size(document)
        if current and (
            len(current) >= max_documents or current_bytes + document_bytes > max_bytes
        ):
            batches.append(tuple(current))
            current, current_bytes = [], 0
        current.append(document)
        current_bytes += document_bytes
    if current:
        batches.append(tuple(current))
    return batches


def send_documents(
    client: RagClient,
    collection: str,
    documents: Sequence[Document],
    *,
    tags: Sequence[str],
    chunking_strategy: str,
    metadata: dict[str, Any],
    batch_size: int,
    quiet: bool,
    console: Console,
) -> list[dict[str, Any]]:
    """Send the documents in order, in batches of at most ``batch_size`` (and
    :data:`MAX_BATCH_BYTES`); a failure is recorded and the run goes on. ``quiet``: no line
    per ingested document and no progress bar (the caller prints JSON)."""
    show_bar = not quiet and console.stderr.isatty()
    bar = tqdm(
        total=len(documents), file=console.stderr, unit="doc", disable=not show_bar, leave=False
    )
    outcomes: list[dict[str, Any]] = []

    def emit(stream: TextIO, line: str) -> None:
        if show_bar:
            bar.write(line, file=stream)  # clears and redraws the bar around the line
        else:
            print(line, file=stream)

    def record(document: Document, result: IngestResult | ApiError) -> None:
        outcome = document_json(document)
        if isinstance(result, ApiError):
            outcome.update(status="failed", http_status=result.status, error=result.message)
            emit(console.stderr, output.failed_line(document.path, str(result)))
        else:
            outcome.update(status="ingested", chunks=result.chunks, document_id=result.document_id)
            if not quiet:
                emit(console.stdout, output.ingested_line(document.path, result.chunks))
        outcomes.append(outcome)
        bar.update(1)

    batches = plan_batches(
        documents,
        max_documents=batch_size,
        max_bytes=MAX_BATCH_BYTES,
        size=lambda document: encoded_size(document_fields(document, tags, metadata)),
    )
    use_batch_route = True
    with bar:
        for batch in batches:
            if len(batch) > 1 and use_batch_route:
                bar.set_postfix_str(f"{batch[0].source} (+{len(batch) - 1})", refresh=False)
                try:
                    results = client.ingest_batch(
                        collection=collection,
                        documents=batch,
                        tags=tags,
                        chunking_strategy=chunking_strategy,
                        metadata=metadata,
                    )
                except ApiError as exc:
                    # The server wrote none of the batch: fall through to one request per
                    # document, so each gets its own outcome. A server without the route
                    # (an older portal) is not asked again.
                    use_batch_route = exc.status not in (404, 405)
                else:
                    for document, result in zip(batch, results, strict=True):
                        record(document, result)
                    continue
            for document in batch:
                bar.set_postfix_str(document.source, refresh=False)
                record(
                    document,
                    _ingest_one(client, collection, document, tags, chunking_strategy, metadata),
                )
    return outcomes


def _ingest_one(
    client: RagClient,
    collection: str,
    document: Document,
    tags: Sequence[str],
    chunking_strategy: str,
    metadata: dict[str, Any],
) -> IngestResult | ApiError:
    """One document through ``/api/rag/ingest``: the server's result, or why it failed."""
    try:
        return client.ingest(
            collection=collection,
            content=document.content,
            title=document.title,
            source=document.source,
            tags=tags,
            chunking_strategy=chunking_strategy,
            metadata=metadata,
        )
    except ApiError as exc:
        return exc


def document_json(document: Document) -> dict[str, Any]:
    """A discovered document as the JSON output lists it."""
    return {
        "path": str(document.path),
        "source": document.source,
        "title": document.title,
        "bytes": document.size,
    }
