"""An ingestion job as the portal reports it (``/api/rag/jobs``), checked as it is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from rag_plugin.cli.errors import ApiError

__all__ = ["ENDED", "STATES", "Job", "JobPage", "JobResult", "Submitted"]

STATES = ("queued", "running", "succeeded", "failed", "cancelled")
ENDED = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class JobResult:
    """One document a succeeded job wrote (or found unchanged); a file job's also says what
    the file was: its media type, its pages, and those whose text still needs OCR."""

    source: str
    document_id: str
    chunks: int
    unchanged: bool
    media_type: str | None = None
    pages: int | None = None
    needs_ocr_pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Job:
    """The fields of a job ``ragctl`` reads; ``body`` is the server's whole JSON object."""

    id: str
    state: str
    stage: str | None
    done: int
    total: int
    collection: str
    shared: bool
    documents: int
    cancel_requested: bool
    results: tuple[JobResult, ...]
    error_code: str | None
    error_message: str | None
    created_at: str
    body: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def ended(self) -> bool:
        """Whether the job has stopped for good (until someone retries it)."""
        return self.state in ENDED

    @property
    def error(self) -> str:
        """``CODE: message`` of a failed job, or the state of one that did not succeed."""
        if self.error_code or self.error_message:
            return f"{self.error_code or 'ERROR'}: {self.error_message or 'no message'}"
        return f"job {self.state}"

    @classmethod
    def from_json(cls, body: Any) -> Job:
        """Read a job object; an id and a known state are required, the rest has defaults."""
        if not isinstance(body, dict):
            raise ApiError(f"job response is not an object: {body!r:.200}")
        job_id, state = body.get("id"), body.get("state")
        if not isinstance(job_id, str) or not job_id or state not in STATES:
            raise ApiError(f"job response has no id and known state: {body!r:.200}")
        progress = body.get("progress")
        progress = progress if isinstance(progress, dict) else {}
        error = body.get("error")
        error = error if isinstance(error, dict) else {}
        stage = body.get("stage")
        return cls(
            id=job_id,
            state=state,
            stage=stage if isinstance(stage, str) and stage else None,
            done=_count(progress.get("done")),
            total=_count(progress.get("total")),
            collection=str(body.get("collection") or ""),
            shared=body.get("shared") is True,
            documents=_count(body.get("documents")),
            cancel_requested=body.get("cancel_requested") is True,
            results=_results(job_id, body.get("results")),
            error_code=_text(error.get("code")),
            error_message=_text(error.get("message")),
            created_at=str(body.get("created_at") or ""),
            body=body,
        )


@dataclass(frozen=True)
class JobPage:
    """One page of ``GET /api/rag/jobs``: its jobs (newest first) and how many match in all."""

    jobs: tuple[Job, ...]
    total: int
    body: Mapping[str, Any] = field(compare=False, repr=False)

    @classmethod
    def from_json(cls, body: Any) -> JobPage:
        entries = body.get("jobs") if isinstance(body, dict) else None
        if not isinstance(entries, list):
            raise ApiError(f"jobs response has no jobs list: {body!r:.200}")
        jobs = tuple(Job.from_json(entry) for entry in entries)
        total = body.get("total")
        return cls(jobs, total if _is_integer(total) else len(jobs), body)


@dataclass(frozen=True)
class Submitted:
    """The 202 answer to an ingest that became a job: the job's id, state and why it is one
    (``requested``, or ``size`` for content over the server's threshold); for an uploaded
    file, the media type the server told from its content."""

    job_id: str
    state: str
    reason: str | None
    media_type: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> Submitted:
        job_id = body.get("job_id") if isinstance(body, dict) else None
        if not isinstance(job_id, str) or not job_id:
            raise ApiError(f"ingest answered 202 without a job_id: {body!r:.200}")
        state, reason = body.get("state"), body.get("reason")
        return cls(
            job_id,
            state if isinstance(state, str) else "queued",
            reason if isinstance(reason, str) else None,
            _text(body.get("media_type")),
        )

    @classmethod
    def from_upload_json(cls, body: Any) -> Submitted:
        """The job of a one-file upload: ``{"jobs": [{"job_id", "state", "media_type", ...}]}``."""
        jobs = body.get("jobs") if isinstance(body, dict) else None
        if not isinstance(jobs, list) or len(jobs) != 1:
            raise ApiError(f"file upload answered 202 without one job: {body!r:.200}")
        return cls.from_json(jobs[0])


def _results(job_id: str, entries: Any) -> tuple[JobResult, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ApiError(f"job {job_id} has results that are not a list: {entries!r:.200}")
    results: list[JobResult] = []
    for position, entry in enumerate(entries):
        item = entry if isinstance(entry, dict) else {}
        source, document_id, chunks = (
            item.get("source"),
            item.get("document_id"),
            item.get("chunks_created"),
        )
        if (
            not isinstance(source, str)
            or not isinstance(document_id, str)
            or not _is_integer(chunks)
        ):
            raise ApiError(
                f"job {job_id} results[{position}] has no string source and document_id and "
                f"integer chunks_created: {entry!r:.200}"
            )
        pages, needs_ocr = item.get("pages"), item.get("needs_ocr_pages")
        results.append(
            JobResult(
                source,
                document_id,
                chunks,
                item.get("unchanged") is True,
                _text(item.get("media_type")),
                pages if _is_integer(pages) else None,
                tuple(page for page in needs_ocr if _is_integer(page))
                if isinstance(needs_ocr, list)
                else (),
            )
        )
    return tuple(results)


def _count(value: Any) -> int:
    return value if _is_integer(value) else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_integer(value: Any) -> TypeGuard[int]:
    """Whether a JSON value is an integer (JSON's true and false are not counts)."""
    return isinstance(value, int) and not isinstance(value, bool)
