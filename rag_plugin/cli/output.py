"""The exact lines ``ragctl`` prints: tab-separated audit lines and readable search results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_plugin.cli.discovery import Document, Ingestible
from rag_plugin.cli.job import Job

SNIPPET_CHARS = 240


def _field(text: str) -> str:
    """One tab-separated field: tabs and line breaks would split the line, so they become spaces."""
    return " ".join(text.replace("\t", " ").splitlines())


def dry_run_line(document: Ingestible) -> str:
    """``path<TAB>title<TAB>N bytes`` for one planned document; a file to upload has
    ``(PDF upload)`` (or DOCX, HTML) for a title, which the portal reads from it."""
    if isinstance(document, Document):
        title = _field(document.title)
    else:
        title = f"({document.type_name} upload)"
    return f"{document.path}\t{title}\t{document.size} bytes"


def dry_run_summary(documents: int) -> str:
    """The last line of a dry run."""
    return f"dry_run=true documents={documents}"


def ingested_line(
    path: Path, chunks: int, *, unchanged: bool = False, needs_ocr_pages: Sequence[int] = ()
) -> str:
    """``ingested<TAB>path<TAB>N chunks`` (stdout), ``unchanged`` first for a document the
    portal already held as it is; then the pages of a file whose text is missing for want
    of OCR, if any."""
    line = f"{'unchanged' if unchanged else 'ingested'}\t{path}\t{chunks} chunks"
    if needs_ocr_pages:
        pages = ", ".join(map(str, needs_ocr_pages))
        if len(needs_ocr_pages) == 1:
            line += f"\tpage {pages} needs OCR: it is an image and its text was not read"
        else:
            line += f"\tpages {pages} need OCR: they are images and their text was not read"
    return line


def failed_line(path: Path, error: str) -> str:
    """``failed<TAB>path<TAB>HTTP status: message`` (stderr)."""
    return f"failed\t{path}\t{_field(error)}"


def failure(outcome: Mapping[str, Any]) -> str:
    """Why a document failed: ``HTTP status: message`` for a refused request, ``CODE:
    message`` for a failed job, then the job's id."""
    text = str(outcome.get("error") or "unknown error")
    if outcome.get("http_status") is not None:
        text = f"HTTP {outcome['http_status']}: {text}"
    elif outcome.get("code"):
        text = f"{outcome['code']}: {text}"
    if outcome.get("job_id"):
        text += f" (job {outcome['job_id']})"
    return text


def skipped_line(path: Path, reason: str) -> str:
    """``skipped<TAB>path<TAB>reason`` for a file that is not ingested (stderr)."""
    return f"skipped\t{path}\t{_field(reason)}"


def job_line(job_id: str, documents: int) -> str:
    """``job<TAB>id<TAB>N documents`` for a job submitted and not waited for."""
    return f"job\t{job_id}\t{documents} documents"


def summary_line(
    documents: int, succeeded: int, failed: int, chunks: int, pending: int = 0, unchanged: int = 0
) -> str:
    """``summary<TAB>documents=N succeeded=S failed=F chunks=C`` (then `` unchanged=U`` for
    the succeeded documents the portal already held as they are, and `` pending=P`` for
    documents in jobs not waited for to the end)."""
    line = f"summary\tdocuments={documents} succeeded={succeeded} failed={failed} chunks={chunks}"
    if unchanged:
        line += f" unchanged={unchanged}"
    return f"{line} pending={pending}" if pending else line


def snippet(content: str, limit: int = SNIPPET_CHARS) -> str:
    """The content on one line, cut at a word boundary near ``limit`` characters."""
    flat = " ".join(content.split())
    if len(flat) <= limit:
        return flat
    # Look one character past the limit so a word ending exactly there is kept whole.
    head = flat[: limit + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else flat[:limit]
    return f"{cut}…"


def search_lines(response: Mapping[str, Any], query: str) -> list[str]:
    """Ranked search results for people: rank, score, title, source, offsets, snippet."""
    results: Sequence[Any] = response.get("results") or []
    header = f"{len(results)} result{'s' if len(results) != 1 else ''} for {query!r}"
    details = [f"strategy={response.get('strategy', '?')}"]
    if response.get("reranked"):
        details.append("reranked")
    if isinstance(response.get("duration_ms"), int | float):
        details.append(f"{response['duration_ms']} ms")
    lines = [f"{header} ({', '.join(details)})"]
    corrected = response.get("corrected_query")
    if isinstance(corrected, str) and corrected and corrected != query:
        lines.append(f"searched for {corrected!r} instead (typo correction)")
    for rank, result in enumerate(results, start=1):
        lines.append("")
        lines.extend(_result_lines(rank, result if isinstance(result, Mapping) else {}))
    return lines


def _result_lines(rank: int, result: Mapping[str, Any]) -> list[str]:
    metadata = result.get("metadata")
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    score = _number(result.get("score"))
    normalized = result.get("normalized_score")
    score_text = f"score {score:.6f}" if score is not None else "score ?"
    if (value := _number(normalized)) is not None:
        score_text += f" (normalized {value:.4f})"
    title = meta.get("title") or "(untitled)"
    location = [f"source: {meta.get('source') or '(none)'}"]
    start, end = meta.get("start_offset"), meta.get("end_offset")
    if isinstance(start, int) and isinstance(end, int):
        location.append(f"chars {start}-{end}")
    if isinstance(meta.get("chunk_index"), int):
        location.append(f"chunk {meta['chunk_index']}")
    location.append(f"id {result.get('id', '?')}")
    return [
        f"{rank}. {_field(str(title))}  [{score_text}]",
        f"   {'  '.join(location)}",
        f"   {snippet(str(result.get('content', '')))}",
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def collection_line(collection: Mapping[str, Any]) -> str:
    """``name<TAB>documents=N chunks=C dim=D`` for one collection."""
    labels = (("document_count", "documents"), ("chunk_count", "chunks"), ("dimensions", "dim"))
    counts = " ".join(f"{label}={collection[key]}" for key, label in labels if key in collection)
    return f"{collection.get('name', '?')}\t{counts}"


def json_text(value: Any) -> str:
    """``--json`` output: indented, non-ASCII as is."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def source_line(number: int, source: Mapping[str, Any]) -> str:
    """A footnote of a chat answer: its number, title (with the page, ``"title, p. 3"``, for a
    passage of a file), collection and source."""
    cited = source.get("citation") or source.get("title") or source.get("document_id")
    return f"  [{number}] {cited} ({source.get('collection')}: {source.get('source')})"


JOB_COLUMNS = ("ID", "STATE", "STAGE", "PROGRESS", "COLLECTION", "DOCS", "ERROR", "CREATED")


def jobs_table(jobs: Sequence[Job]) -> list[str]:
    """The jobs as columns under a header, two spaces apart; ``-`` for an empty cell."""
    rows = [JOB_COLUMNS, *(_job_row(job) for job in jobs)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(JOB_COLUMNS))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _job_row(job: Job) -> tuple[str, ...]:
    return (
        job.id,
        _job_state(job),
        job.stage or "-",
        f"{job.done}/{job.total}" if job.total else "-",
        _field(job.collection) or "-",
        str(job.documents),
        job.error_code or "-",
        _timestamp(job.created_at),
    )


def _job_state(job: Job) -> str:
    """The state; a job asked to stop that has not stopped yet is ``running/cancelling``."""
    return f"{job.state}/cancelling" if job.cancel_requested and not job.ended else job.state


def _timestamp(value: str) -> str:
    """An ISO 8601 time as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; anything else as it came."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return _field(value) or "-"
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%dT%H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_state_line(job: Job) -> str:
    """``job<TAB>id<TAB>state`` after a cancel or retry (and why a running job still runs)."""
    line = f"job\t{job.id}\t{job.state}"
    if job.cancel_requested and not job.ended:
        line += "\tcancel requested: it stops at its next stage"
    return line


def jobs_footer(shown: int, total: int) -> str | None:
    """A note when the page does not hold every matching job."""
    if shown >= total:
        return None
    return f"{shown} of {total} jobs shown; --limit shows more"
