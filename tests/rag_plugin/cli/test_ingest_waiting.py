"""ragctl ingest-dir waits for its jobs: polls, progress, timeouts and interruptions (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli.waiting import Pacer
from tests.rag_plugin.cli.conftest import FakeTime
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    DATA,
    NOTES,
    TUNING,
    Intercepting,
    expected_run_output,
    ingest,
    make_docs,
)


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
