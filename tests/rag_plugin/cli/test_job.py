"""Reading the portal's job objects: every field of the contract, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.cli.errors import ApiError
from rag_plugin.cli.job import Job, JobPage, JobResult, Submitted

JOB_ID = "0b7d4a9e-0c53-4f29-9a43-5e2b0f6c1d2a"


def contract_job(**changes: Any) -> dict[str, Any]:
    """A JOB object with every field the contract names."""
    job: dict[str, Any] = {
        "id": JOB_ID,
        "state": "succeeded",
        "stage": None,
        "progress": {"done": 3, "total": 3},
        "collection": "docs",
        "shared": False,
        "kind": "batch",
        "user": "alice",
        "documents": 2,
        "input_bytes": 120,
        "attempts": 1,
        "max_attempts": 3,
        "cancel_requested": False,
        "results": [
            {"document_id": "d1", "source": "a.md", "chunks_created": 2, "unchanged": False},
            {"document_id": "d2", "source": "b.md", "chunks_created": 1, "unchanged": True},
        ],
        "document_ids": ["d1", "d2"],
        "error": None,
        "created_at": "2025-01-01T00:00:01.123456Z",
        "started_at": "2025-01-01T00:00:02Z",
        "finished_at": "2025-01-01T00:00:03Z",
    }
    return {**job, **changes}


def test_a_contract_job_is_read_with_its_results() -> None:
    body = contract_job()

    job = Job.from_json(body)

    assert (job.id, job.state, job.stage, job.done, job.total) == (JOB_ID, "succeeded", None, 3, 3)
    assert (job.collection, job.shared, job.documents, job.cancel_requested) == (
        "docs",
        False,
        2,
        False,
    )
    assert job.results == (JobResult("a.md", "d1", 2, False), JobResult("b.md", "d2", 1, True))
    assert (job.error_code, job.error_message, job.ended) == (None, None, True)
    assert job.body is body


@pytest.mark.parametrize(
    ("state", "ended"),
    [("queued", False), ("running", False), ("succeeded", True), ("failed", True),
     ("cancelled", True)],
)  # fmt: skip
def test_ended_means_succeeded_failed_or_cancelled(state: str, ended: bool) -> None:
    assert Job.from_json(contract_job(state=state, results=[])).ended is ended


@pytest.mark.parametrize(
    ("error", "text"),
    [
        ({"code": "WORKER_LOST", "message": "Failed 3 times."}, "WORKER_LOST: Failed 3 times."),
        ({"code": "FORBIDDEN"}, "FORBIDDEN: no message"),
        (None, "job failed"),
    ],
)
def test_a_failed_job_says_its_code_and_message(error: Any, text: str) -> None:
    job = Job.from_json(contract_job(state="failed", results=[], error=error))

    assert job.error == text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "job response is not an object: []"),
        ({"state": "queued"}, "job response has no id and known state: {'state': 'queued'}"),
        ({"id": "x", "state": "paused"}, "job response has no id and known state: "
         "{'id': 'x', 'state': 'paused'}"),
        ({"id": "", "state": "queued"}, "job response has no id and known state: "
         "{'id': '', 'state': 'queued'}"),
        ({"id": "x", "state": "succeeded", "results": {}}, "job x has results that are not a "
         "list: {}"),
        ({"id": "x", "state": "succeeded", "results": [{"source": "a.md", "document_id": "d1",
          "chunks_created": True}]}, "job x results[0] has no string source and document_id and "
         "integer chunks_created: {'source': 'a.md', 'document_id': 'd1', 'chunks_created': True}"),
    ],
)  # fmt: skip
def test_a_job_without_what_ragctl_relies_on_is_refused(body: Any, message: str) -> None:
    with pytest.raises(ApiError) as caught:
        Job.from_json(body)

    assert str(caught.value) == message


def test_a_minimal_job_gets_defaults() -> None:
    job = Job.from_json({"id": "x", "state": "queued"})

    assert (job.stage, job.done, job.total, job.documents, job.results, job.created_at) == (
        None,
        0,
        0,
        0,
        (),
        "",
    )


def test_a_page_reads_its_jobs_and_total() -> None:
    body = {"jobs": [contract_job(), contract_job(id="y", state="queued")], "total": 7}

    page = JobPage.from_json(body)

    assert [job.id for job in page.jobs] == [JOB_ID, "y"]
    assert page.total == 7
    assert JobPage.from_json({"jobs": []}).total == 0
    with pytest.raises(ApiError, match="jobs response has no jobs list"):
        JobPage.from_json([])


def test_a_202_answer_is_read_as_the_job_submitted() -> None:
    body = {"job_id": JOB_ID, "status_url": f"/api/rag/jobs/{JOB_ID}", "state": "queued",
            "reason": "size"}  # fmt: skip

    assert Submitted.from_json(body) == Submitted(JOB_ID, "queued", "size")
    with pytest.raises(ApiError) as caught:
        Submitted.from_json({"state": "queued"})
    assert str(caught.value) == "ingest answered 202 without a job_id: {'state': 'queued'}"


def test_a_file_jobs_result_says_its_type_pages_and_the_pages_needing_ocr() -> None:
    result = {"document_id": "d1", "source": "scan.pdf", "chunks_created": 3, "unchanged": False,
              "media_type": "application/pdf", "pages": 5, "needs_ocr_pages": [2, 4]}  # fmt: skip

    job = Job.from_json(contract_job(kind="file", documents=1, results=[result]))

    assert job.results == (JobResult("scan.pdf", "d1", 3, False, "application/pdf", 5, (2, 4)),)


def test_a_one_file_uploads_202_answer_is_read_as_its_job() -> None:
    body = {"jobs": [{"filename": "a.pdf", "media_type": "application/pdf", "job_id": JOB_ID,
                      "status_url": f"/api/rag/jobs/{JOB_ID}", "state": "queued"}]}  # fmt: skip

    assert Submitted.from_upload_json(body) == Submitted(JOB_ID, "queued", None, "application/pdf")
    with pytest.raises(ApiError) as caught:
        Submitted.from_upload_json({"jobs": []})
    assert str(caught.value) == "file upload answered 202 without one job: {'jobs': []}"
