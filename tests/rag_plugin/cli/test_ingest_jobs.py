"""ragctl ingest-dir submits ingestion jobs and waits for them (issue 31, item 7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli import run
from rag_plugin.cli.waiting import Pacer
from tests.rag_plugin.cli.conftest import FakeTime
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import FakePortal
from tests.rag_plugin.cli.test_ingest_dir import (
    BROKEN_NOTE,
    expected_run_output,
    ingest_argv,
    make_console,
    make_docs,
)

DATA, TUNING, INTRO, NOTES = (
    "data.jsonl",
    "guide/advanced/TUNING.MD",
    "guide/intro.md",
    "release_notes.TXT",
)
TOO_SMALL = ("INVALID_INPUT", "Content too small to chunk")
DISABLED = ("FORBIDDEN", "Collection 'docs' is not enabled in this tenant's source allowlist.")


class Intercepting(httpx.BaseTransport):
    """Sends requests on to the fake portal; ``before`` may answer a request itself first, and
    every job object polled is kept."""

    def __init__(self, before: Callable[[httpx.Request], httpx.Response | None] = lambda _: None):
        self.inner = httpx.HTTPTransport()
        self.before = before
        self.polled: list[tuple[str, str | None]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.before(request)
        if answer is not None:
            return answer
        response = self.inner.handle_request(request)
        if request.method == "GET" and request.url.path.startswith("/api/rag/jobs/"):
            response.read()
            job = json.loads(response.content)
            self.polled.append((job["state"], job["stage"]))
        return response

    def close(self) -> None:
        self.inner.close()


def ingest(
    portal: FakePortal,
    docs: Path,
    *extra: str,
    transport: httpx.BaseTransport | None = None,
    terminal: bool = False,
) -> tuple[int, str, str]:
    """Run ingest-dir as alice; the exit status, stdout and stderr."""
    console, stdout, stderr = make_console(terminal=terminal, transport=transport)
    code = run(ingest_argv(portal, docs, "--token", "alice", *extra), console)
    return code, stdout.getvalue(), stderr.getvalue()


def test_a_job_is_polled_through_its_stages_with_a_growing_interval(
    tmp_path: Path, fake_portal: FakePortal, fake_time: FakeTime
) -> None:
    docs = make_docs(tmp_path)
    transport = Intercepting()

    code, out, err = ingest(fake_portal, docs, transport=transport)

    assert (code, out, err) == (0, expected_run_output(docs), BROKEN_NOTE.format(docs=docs))
    assert transport.polled == [
        ("running", "parsing"),
        ("running", "embedding"),
        ("running", "writing"),
        ("succeeded", None),
    ]
    assert fake_time.sleeps == [0.05, 0.1, 0.2, 0.4]


def test_one_progress_bar_counts_the_documents_of_every_job(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)

    code, out, err = ingest(fake_portal, docs, "--batch-size", "2", terminal=True)

    assert code == 0
    assert out == expected_run_output(docs)
    # The portal runs one collection's jobs one after the other: the first job's two
    # documents are counted while the second job still runs.
    draws = [err.index(f"{done}/4") for done in (0, 2, 4)]
    assert draws == sorted(draws)
    assert err.count("/4") == err.count("0/4") + err.count("2/4") + err.count("4/4")
    assert fake_portal.polls().count(job_id(2)) > fake_portal.polls().count(job_id(1))


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


def test_wait_timeout_reports_what_ended_and_names_the_jobs_still_running(
    tmp_path: Path, fake_portal: FakePortal, fake_time: FakeTime
) -> None:
    docs = make_docs(tmp_path)
    start = fake_time.now

    code, out, err = ingest(fake_portal, docs, "--batch-size", "2", "--wait-timeout", "3")

    assert code == 1
    assert out == (
        f"ingested\t{docs}/{DATA}\t1 chunks\n"
        f"ingested\t{docs}/{TUNING}\t2 chunks\n"
        "summary\tdocuments=4 succeeded=2 failed=0 chunks=3 pending=2\n"
    )
    assert err == BROKEN_NOTE.format(docs=docs) + (
        f"error: 1 job(s) had not ended after --wait-timeout 3 seconds and go on in the portal: "
        f"{job_id(2)} (running); `ragctl jobs` shows them\n"
    )
    # The last look is at the deadline, never after it.
    assert fake_time.now == start + 3
    assert [job.state for job in fake_portal.queue.jobs] == ["succeeded", "running"]


def test_wait_timeout_with_no_worker_leaves_every_job_queued(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.queue.hold = True

    code, out, err = ingest(fake_portal, docs, "--wait-timeout", "0.5", "--json")

    report = json.loads(out)
    assert code == 1
    assert [item["status"] for item in report["documents"]] == ["queued"] * 4
    assert report["summary"]["pending"] == 4
    assert err.endswith(
        f"error: 1 job(s) had not ended after --wait-timeout 0.5 seconds and go on in the "
        f"portal: {job_id(1)} (queued); `ragctl jobs` shows them\n"
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


@pytest.mark.parametrize("status", [None, 429, 502, 503])
def test_a_poll_that_may_pass_is_asked_again(
    tmp_path: Path, fake_portal: FakePortal, status: int | None
) -> None:
    docs = make_docs(tmp_path)
    refused: list[str] = []

    def flaky(request: httpx.Request) -> httpx.Response | None:
        if request.method != "GET" or len(refused) == 2:
            return None
        refused.append(request.url.path)
        if status is None:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(status, json={"error": "Try again", "code": "UNAVAILABLE"})

    code, out, _ = ingest(fake_portal, docs, transport=Intercepting(flaky))

    assert (code, out) == (0, expected_run_output(docs))
    assert refused == [f"/api/rag/jobs/{job_id(1)}"] * 2
    assert fake_portal.polls() == [job_id(1)] * 4


def test_a_job_the_portal_no_longer_knows_fails_its_files(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)

    def gone(request: httpx.Request) -> httpx.Response | None:
        if request.method != "GET":
            return None
        return httpx.Response(404, json={"error": "Job not found.", "code": "NOT_FOUND"})

    code, out, err = ingest(fake_portal, docs, "--batch-size", "3", transport=Intercepting(gone))

    assert code == 1
    assert out == "summary\tdocuments=4 succeeded=0 failed=4 chunks=0\n"
    assert err.splitlines()[3:5] == [
        f"failed\t{docs}/{DATA}\tHTTP 404: Job not found. (job {job_id(1)})",
        f"failed\t{docs}/{TUNING}\tHTTP 404: Job not found. (job {job_id(1)})",
    ]
    assert (
        err.splitlines()[6] == f"failed\t{docs}/{NOTES}\tHTTP 404: Job not found. (job {job_id(2)})"
    )


def test_a_refused_poll_stops_the_wait_naming_the_jobs_that_go_on(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)

    def expired(request: httpx.Request) -> httpx.Response | None:
        if request.method != "GET":
            return None
        return httpx.Response(401, json={"error": "Token expired", "code": "AUTHENTICATION_FAILED"})

    code, out, err = ingest(fake_portal, docs, transport=Intercepting(expired))

    assert (code, out) == (1, "")
    assert err == BROKEN_NOTE.format(docs=docs) + (
        "error: waiting for the ingestion jobs failed: HTTP 401: Token expired; these go on in "
        f"the portal: {job_id(1)}\n"
    )


def test_ctrl_c_while_waiting_names_the_jobs_that_go_on(
    tmp_path: Path, fake_portal: FakePortal, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = make_docs(tmp_path)

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Pacer, "sleep", staticmethod(interrupt))

    code, out, err = ingest(fake_portal, docs, "--batch-size", "2")

    assert (code, out) == (130, "")
    assert err == BROKEN_NOTE.format(docs=docs) + (
        f"these jobs go on in the portal (`ragctl jobs` shows them): {job_id(1)}, {job_id(2)}\n"
        "error: interrupted\n"
    )
