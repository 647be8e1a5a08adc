"""ragctl ingest-dir submits ingestion jobs, and each job's outcome is its files' (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    DATA,
    INTRO,
    NOTES,
    TUNING,
    Intercepting,
    expected_run_output,
    ingest,
    make_docs,
)

TOO_SMALL = ("INVALID_INPUT", "Content too small to chunk")
DISABLED = ("FORBIDDEN", "Collection 'docs' is not enabled in this tenant's source allowlist.")


@pytest.mark.parametrize(
    ("batch_size", "jobs"), [("20", [(1, 4)]), ("2", [(1, 2), (2, 2)]), ("3", [(1, 3), (2, 1)])]
)
def test_no_wait_prints_each_job_and_exits_without_polling(
    tmp_path: Path, fake_portal: FakePortal, batch_size: str, jobs: list[tuple[int, int]]
) -> None:
    docs = make_docs(tmp_path)

    code, out, err = ingest(fake_portal, docs, "--no-wait", "--batch-size", batch_size)

    assert code == 0
    assert out == (
        "".join(f"job\t{job_id(number)}\t{count} documents\n" for number, count in jobs)
        + "summary\tdocuments=4 succeeded=0 failed=0 chunks=0 pending=4\n"
    )
    assert err == BROKEN_NOTE.format(docs=docs)
    assert fake_portal.polls() == []
    assert [job.state for job in fake_portal.queue.jobs] == ["queued"] * len(jobs)
    assert fake_portal.documents == {}


def test_no_wait_json_gives_each_document_its_job(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = make_docs(tmp_path)

    code, out, _ = ingest(fake_portal, docs, "--no-wait", "--batch-size", "3", "--json")

    report = json.loads(out)
    assert code == 0
    assert [(item["source"], item["status"], item["job_id"]) for item in report["documents"]] == [
        (DATA, "queued", job_id(1)),
        (TUNING, "queued", job_id(1)),
        (INTRO, "queued", job_id(1)),
        (NOTES, "queued", job_id(2)),
    ]
    assert report["jobs"] == [
        {"job_id": job_id(1), "state": "queued", "documents": 3, "reason": "requested"},
        {"job_id": job_id(2), "state": "queued", "documents": 1, "reason": "requested"},
    ]
    assert report["summary"] == {
        "documents": 4,
        "succeeded": 0,
        "failed": 0,
        "pending": 4,
        "chunks": 0,
        "unchanged": 0,
    }


def test_a_failed_job_fails_its_files_with_the_jobs_code_and_message(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.queue.errors[INTRO] = DISABLED

    code, out, err = ingest(fake_portal, docs)

    reason = f"FORBIDDEN: {DISABLED[1]} (job {job_id(1)})"
    assert code == 1
    assert out == "summary\tdocuments=4 succeeded=0 failed=4 chunks=0\n"
    assert err == (
        BROKEN_NOTE.format(docs=docs)
        + "".join(f"failed\t{docs}/{source}\t{reason}\n" for source in (DATA, TUNING, INTRO, NOTES))
        + "error: 4 document(s) failed ingestion\n"
    )
    # Only an invalid document sends a batch's documents again one by one; this is not one.
    assert len(fake_portal.queue.jobs) == 1
    assert fake_portal.documents == {}


def test_a_batch_job_failing_on_one_invalid_document_is_sent_again_one_by_one(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.queue.errors[INTRO] = TOO_SMALL

    code, out, err = ingest(fake_portal, docs, "--json")

    report = json.loads(out)
    assert code == 1
    assert fake_portal.ingests() == [
        ("/api/rag/ingest/batch", [DATA, TUNING, INTRO, NOTES]),
        *[("/api/rag/ingest", [source]) for source in (DATA, TUNING, INTRO, NOTES)],
    ]
    assert [job.error for job in fake_portal.queue.jobs] == [
        {"code": "INVALID_INPUT", "message": "documents[2]: Content too small to chunk"},
        None,
        None,
        {"code": "INVALID_INPUT", "message": "Content too small to chunk"},
        None,
    ]
    assert report["documents"][2] == {
        "path": f"{docs}/{INTRO}",
        "source": INTRO,
        "title": "Getting Started",
        "bytes": 35,
        "status": "failed",
        "http_status": None,
        "error": "Content too small to chunk",
        "code": "INVALID_INPUT",
        "job_id": job_id(4),
    }
    assert [(item["status"], item["job_id"]) for item in report["documents"]] == [
        ("ingested", job_id(2)),
        ("ingested", job_id(3)),
        ("failed", job_id(4)),
        ("ingested", job_id(5)),
    ]
    assert [(job["job_id"], job["state"], job["documents"]) for job in report["jobs"]] == [
        (job_id(1), "failed", 4),
        (job_id(2), "succeeded", 1),
        (job_id(3), "succeeded", 1),
        (job_id(4), "failed", 1),
        (job_id(5), "succeeded", 1),
    ]
    assert fake_portal.sources("docs") == [DATA, TUNING, NOTES]
    assert err == BROKEN_NOTE.format(docs=docs) + "error: 1 document(s) failed ingestion\n"


def test_the_text_line_of_a_document_that_failed_in_a_job(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.queue.errors[INTRO] = TOO_SMALL

    code, out, err = ingest(fake_portal, docs)

    assert code == 1
    assert out == (
        f"ingested\t{docs}/{DATA}\t1 chunks\n"
        f"ingested\t{docs}/{TUNING}\t2 chunks\n"
        f"ingested\t{docs}/{NOTES}\t1 chunks\n"
        "summary\tdocuments=4 succeeded=3 failed=1 chunks=4\n"
    )
    assert err == (
        BROKEN_NOTE.format(docs=docs)
        + f"failed\t{docs}/{INTRO}\tINVALID_INPUT: Content too small to chunk (job {job_id(4)})\n"
        + "error: 1 document(s) failed ingestion\n"
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_an_older_portal_that_ingests_at_once_needs_no_jobs(
    tmp_path: Path, fake_portal: FakePortal, as_json: bool
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.has_jobs = False

    code, out, _ = ingest(fake_portal, docs, *(["--json"] if as_json else []))

    assert code == 0
    assert fake_portal.requests[0].body["async"] is True
    assert fake_portal.polls() == []
    assert fake_portal.queue.jobs == []
    if as_json:
        report = json.loads(out)
        assert report["jobs"] == []
        assert [item["document_id"] for item in report["documents"]] == [
            "doc1",
            "doc2",
            "doc3",
            "doc4",
        ]
        assert all("job_id" not in item for item in report["documents"])
    else:
        assert out == expected_run_output(docs)


def test_a_job_cancelled_meanwhile_fails_its_files_as_cancelled(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)

    def cancel_first(request: httpx.Request) -> None:
        if request.method == "GET" and fake_portal.polls() == []:
            fake_portal.handle("POST", f"/api/rag/jobs/{job_id(1)}/cancel", "", "Bearer alice", {})

    code, out, err = ingest(fake_portal, docs, transport=Intercepting(cancel_first))

    assert code == 1
    assert out == "summary\tdocuments=4 succeeded=0 failed=4 chunks=0\n"
    assert (
        err.splitlines()[3] == f"failed\t{docs}/{DATA}\tCANCELLED: job cancelled (job {job_id(1)})"
    )
