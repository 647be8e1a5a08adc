"""Sending ``ragctl ingest-dir``'s documents as ingestion jobs, and waiting for them.

Text documents go in batches through ``/api/rag/ingest/batch`` (one request per document when
a batch is refused, or the server has no batch route), each request asking for a job; PDF,
DOCX and HTML files are uploaded one a request to ``/api/rag/files``, which makes a job of
each. The jobs are then polled until they end, with one progress bar over all the files on a
terminal. A portal that predates jobs ingests text at once (200), which counts as done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from tqdm import tqdm

from rag_plugin.cli.batching import MAX_BATCH_BYTES, plan_batches
from rag_plugin.cli.client import (
    ApiError,
    IngestResult,
    RagClient,
    document_fields,
    encoded_size,
)
from rag_plugin.cli.discovery import Document, FileDocument, Ingestible
from rag_plugin.cli.job import Job, JobResult, Submitted
from rag_plugin.cli.waiting import JobWatch, Pacer

__all__ = ["Interrupted", "Sent", "document_json", "send_documents"]


@dataclass(frozen=True)
class Sent:
    """What became of the documents: an outcome each, in their order (``status`` ingested,
    failed, the state of the job still carrying it, or ``not sent`` after Ctrl-C), and every
    job submitted."""

    outcomes: list[dict[str, Any]]
    jobs: list[dict[str, Any]]

    @property
    def pending(self) -> list[dict[str, Any]]:
        """The jobs still queued or running, oldest first."""
        return [job for job in self.jobs if job["state"] in ("queued", "running")]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while sending or waiting; the jobs submitted go on in the portal. ``sent``:
    what was known then."""

    def __init__(self, sent: Sent) -> None:
        super().__init__()
        self.sent = sent


@dataclass
class _Options:
    collection: str
    tags: Sequence[str]
    chunking_strategy: str | None
    metadata: dict[str, Any]


@dataclass
class _JobEntry:
    """A submitted job and the positions of its documents."""

    job_id: str
    positions: tuple[int, ...]
    state: str
    reason: str | None

    def json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "documents": len(self.positions),
            "reason": self.reason,
        }


@dataclass
class _Run:
    """One ingest-dir run: each document's outcome once decided, and the jobs deciding them."""

    client: RagClient
    options: _Options
    documents: Sequence[Ingestible]
    bar: Any  # tqdm: counts the documents decided
    outcomes: dict[int, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, _JobEntry] = field(default_factory=dict)
    # The media type the server told from an uploaded file's content, by position.
    detected: dict[int, str] = field(default_factory=dict)
    watch: JobWatch = field(init=False)
    texts: dict[int, Document] = field(init=False)
    files: dict[int, FileDocument] = field(init=False)

    def __post_init__(self) -> None:
        self.watch = JobWatch(self.client.job)
        self.texts, self.files = {}, {}
        for position, document in enumerate(self.documents):
            if isinstance(document, Document):
                self.texts[position] = document
            else:
                self.files[position] = document

    def submit(self, batches: Sequence[tuple[int, ...]]) -> None:
        """Ask for a job per batch; a refused batch goes again one request per document."""
        use_batch_route = True
        for batch in batches:
            if len(batch) > 1 and use_batch_route:
                first = self.documents[batch[0]].source
                self.bar.set_postfix_str(f"sending {first} (+{len(batch) - 1})")
                try:
                    answer = self.client.ingest_batch(
                        collection=self.options.collection,
                        documents=[self.texts[position] for position in batch],
                        tags=self.options.tags,
                        chunking_strategy=self.options.chunking_strategy,
                        metadata=self.options.metadata,
                        job=True,
                    )
                except ApiError as exc:
                    # The server took none of the batch: fall through to one request per
                    # document, so each gets its own outcome. A server without the route
                    # (an older portal) is not asked again.
                    use_batch_route = exc.status not in (404, 405)
                else:
                    if isinstance(answer, Submitted):
                        self._track(answer, batch)
                    else:
                        for position, result in zip(batch, answer, strict=True):
                            self._ingested(position, result, None)
                    continue
            for position in batch:
                self._submit_one(position)

    def upload(self) -> None:
        """Upload each file in its own request, read only now: one file in memory at a time."""
        for position, document in self.files.items():
            self.bar.set_postfix_str(f"uploading {document.source}")
            try:
                data = document.path.read_bytes()
            except OSError as exc:
                self._decide(position, status="failed", http_status=None, error=str(exc), code=None)
                continue
            try:
                answer = self.client.upload_file(
                    collection=self.options.collection,
                    filename=document.path.name,
                    data=data,
                    source=document.source,
                    tags=self.options.tags,
                    chunking_strategy=self.options.chunking_strategy,
                    metadata=self.options.metadata,
                )
            except ApiError as exc:
                self._refused(position, exc)
                continue
            if answer.media_type is not None:
                self.detected[position] = answer.media_type
            self._track(answer, (position,))

    def wait(self, pacer: Pacer) -> None:
        """Poll the jobs until each has ended or the pacer's deadline has passed."""
        while self.watch.pending and pacer.wait():
            for job_id, answer in self.watch.poll():
                self._settle(self.jobs[job_id], answer)
            self._count()
            for job_id, seen in self.watch.last_seen.items():
                if seen is not None:
                    self.jobs[job_id].state = seen.state

    def sent(self) -> Sent:
        outcomes = []
        carried = {position: entry for entry in self.jobs.values() for position in entry.positions}
        for position in range(len(self.documents)):
            outcome = self.outcomes.get(position)
            if outcome is None:
                entry = carried.get(position)
                if entry is None:  # interrupted before it was sent
                    outcome = {**self._listed(position), "status": "not sent"}
                else:
                    outcome = {**self._listed(position), "status": entry.state}
                    outcome["job_id"] = entry.job_id
            outcomes.append(outcome)
        return Sent(outcomes, [entry.json() for entry in self.jobs.values()])

    def _submit_one(self, position: int) -> None:
        document = self.texts[position]
        self.bar.set_postfix_str(f"sending {document.source}")
        try:
            answer = self.client.ingest(
                collection=self.options.collection,
                content=document.content,
                title=document.title,
                source=document.source,
                tags=self.options.tags,
                chunking_strategy=self.options.chunking_strategy,
                metadata=self.options.metadata,
                job=True,
            )
        except ApiError as exc:
            self._refused(position, exc)
            return
        if isinstance(answer, Submitted):
            self._track(answer, (position,))
        else:
            self._ingested(position, answer, None)

    def _track(self, submitted: Submitted, positions: tuple[int, ...]) -> None:
        self.jobs[submitted.job_id] = _JobEntry(
            submitted.job_id, positions, submitted.state, submitted.reason
        )
        self.watch.add([submitted.job_id])

    def _settle(self, entry: _JobEntry, answer: Job | ApiError) -> None:
        """Decide the documents of a job that has ended (or that the server no longer knows)."""
        if isinstance(answer, ApiError):
            entry.state = "unknown"
            for position in entry.positions:
                self._decide(
                    position,
                    status="failed",
                    http_status=answer.status,
                    error=answer.message,
                    code=None,
                    job_id=entry.job_id,
                )
            return
        entry.state = answer.state
        if answer.state == "succeeded":
            by_source = {result.source: result for result in answer.results}
            for position in entry.positions:
                source = self.documents[position].source
                if source in by_source:
                    self._ingested(position, by_source[source], entry.job_id)
                else:
                    self._decide(
                        position,
                        status="failed",
                        http_status=None,
                        error="the job succeeded but reported no result for this source",
                        code=None,
                        job_id=entry.job_id,
                    )
        elif answer.error_code == "INVALID_INPUT" and len(entry.positions) > 1:
            # One document the server could not take fails its whole batch, as a refused
            # batch request does: each goes again on its own, so only the bad ones fail.
            for position in entry.positions:
                self._submit_one(position)
        else:
            for position in entry.positions:
                self._decide(
                    position,
                    status="failed",
                    http_status=None,
                    error=answer.error_message or f"job {answer.state}",
                    code=answer.error_code or answer.state.upper(),
                    job_id=entry.job_id,
                )

    def _ingested(
        self, position: int, result: IngestResult | JobResult, job_id: str | None
    ) -> None:
        fields: dict[str, Any] = {"chunks": result.chunks, "document_id": result.document_id}
        if job_id is not None:
            fields["job_id"] = job_id
        if isinstance(result, JobResult):
            fields["unchanged"] = result.unchanged
            if result.media_type is not None:  # a file's: what the portal read in it
                fields["media_type"] = result.media_type
                fields["pages"] = result.pages
                fields["needs_ocr_pages"] = list(result.needs_ocr_pages)
        self._decide(position, status="ingested", **fields)

    def _refused(self, position: int, exc: ApiError) -> None:
        """The server refused the document's request (or could not be reached)."""
        self._decide(
            position,
            status="failed",
            http_status=exc.status,
            error=exc.message,
            code=exc.server_code,
        )

    def _decide(self, position: int, **fields: Any) -> None:
        self.outcomes[position] = {**self._listed(position), **fields}

    def _listed(self, position: int) -> dict[str, Any]:
        """The document as the output lists it, with the type the server found in a file."""
        listed = document_json(self.documents[position])
        if position in self.detected:
            listed["media_type"] = self.detected[position]
        return listed

    def _count(self) -> None:
        """Move the bar to the documents decided so far (once a round, not per document)."""
        left = len(self.watch.pending)
        self.bar.set_postfix_str(f"{left} job(s) to finish" if left else "", refresh=False)
        if len(self.outcomes) > self.bar.n:
            self.bar.update(len(self.outcomes) - self.bar.n)


def send_documents(
    client: RagClient,
    collection: str,
    documents: Sequence[Ingestible],
    *,
    tags: Sequence[str],
    chunking_strategy: str | None,
    metadata: dict[str, Any],
    batch_size: int,
    wait: bool,
    wait_timeout: float,
    progress: TextIO | None,
) -> Sent:
    """Submit the text documents in order, in batches of at most ``batch_size`` (and
    :data:`MAX_BATCH_BYTES`), upload the files one by one, then (``wait``) wait up to
    ``wait_timeout`` seconds for their jobs. A failure is recorded and the run goes on.
    ``progress``: where to draw the bar."""
    bar = tqdm(
        total=len(documents),
        file=progress,
        unit="doc",
        disable=progress is None,
        leave=False,
        mininterval=0,  # it moves once a round of polls at most: show every move
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} documents [{elapsed}{postfix}]",
    )
    options = _Options(collection, tags, chunking_strategy, metadata)
    run = _Run(client, options, documents, bar)
    batches = plan_batches(
        list(run.texts),
        max_documents=batch_size,
        max_bytes=MAX_BATCH_BYTES,
        size=lambda position: encoded_size(document_fields(run.texts[position], tags, metadata)),
    )
    with bar:
        try:
            run.submit(batches)
            run.upload()
            run._count()
            if wait:
                run.wait(Pacer(wait_timeout))
        except KeyboardInterrupt:
            raise Interrupted(run.sent()) from None
        except ApiError as exc:
            # Only a poll raises (a refused submission is a document's outcome).
            ids = ", ".join(job["job_id"] for job in run.sent().pending)
            raise ApiError(
                f"waiting for the ingestion jobs failed: {exc}; these go on in the portal: {ids}"
            ) from exc
    return run.sent()


def document_json(document: Ingestible) -> dict[str, Any]:
    """A discovered document as the JSON output lists it: a file's title is the portal's to
    read, so it has the media type ragctl expects instead (the portal's, once it has told)."""
    if isinstance(document, FileDocument):
        return {
            "path": str(document.path),
            "source": document.source,
            "media_type": document.media_type,
            "bytes": document.size,
        }
    return {
        "path": str(document.path),
        "source": document.source,
        "title": document.title,
        "bytes": document.size,
    }
