"""ragctl jobs: the table, --watch, cancel and retry against the fake portal's job routes."""

from __future__ import annotations

import json

import pytest

from rag_plugin.cli import main, run
from tests.rag_plugin.cli.conftest import FakeTime
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import ForbiddenTransport, make_console

J1, J2, J3 = job_id(1), job_id(2), job_id(3)
TIME = "2025-01-01T00:00:"
HEADER = "ID                                    STATE      STAGE    PROGRESS  COLLECTION  DOCS  ERROR          CREATED"  # noqa: E501


def ragctl(portal: FakePortal, *argv: str, user: str = "alice") -> tuple[int, str, str]:
    """Run ``ragctl jobs ARGV`` as ``user``; the exit status, stdout and stderr."""
    console, stdout, stderr = make_console()
    code = run(["jobs", "--host", portal.url("acme.localhost"), "--token", user, *argv], console)
    return code, stdout.getvalue(), stderr.getvalue()


def submit(portal: FakePortal, source: str, collection: str = "docs", user: str = "alice") -> str:
    """An async ingest of one document, as ragctl ingest-dir --no-wait would send it."""
    body = {"collection": collection, "content": "Some text.", "source": source, "async": True}
    status, answer = portal.handle("POST", "/api/rag/ingest", "", f"Bearer {user}", body)
    assert status == 202
    return str(answer["job_id"])


def read(portal: FakePortal, key: str, times: int = 1, user: str = "alice") -> dict[str, object]:
    """GET the job ``times`` times (each read moves it a step); its last state."""
    answer: dict[str, object] = {}
    for _ in range(times):
        _, answer = portal.handle("GET", f"/api/rag/jobs/{key}", "", f"Bearer {user}", None)
    return answer


def three_jobs(portal: FakePortal) -> None:
    """J1 succeeded on docs, J2 failed on notes, J3 queued behind J1 on docs."""
    portal.queue.errors["bad.md"] = ("INVALID_INPUT", "Content too small to chunk")
    submit(portal, "a.md")
    submit(portal, "bad.md", collection="notes")
    submit(portal, "c.md")
    assert read(portal, J1, times=4)["state"] == "succeeded"
    assert read(portal, J2, times=3)["state"] == "failed"
    assert portal.queue.jobs[2].state == "queued"


def test_jobs_prints_a_table_newest_first(fake_portal: FakePortal) -> None:
    three_jobs(fake_portal)

    code, out, err = ragctl(fake_portal)

    # Listing is a read: J3, free to start now that J1 has ended, starts.
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        HEADER,
        f"{J3}  running    parsing  0/1       docs        1     -              {TIME}03Z",
        f"{J2}  failed     -        1/1       notes       1     INVALID_INPUT  {TIME}02Z",
        f"{J1}  succeeded  -        1/1       docs        1     -              {TIME}01Z",
    ]
    assert fake_portal.requests[-1].query == {"limit": "50"}


def test_filters_and_limit_go_to_the_server(fake_portal: FakePortal) -> None:
    three_jobs(fake_portal)
    argv = ["--state", "failed", "--collection", "notes", "--limit", "5"]

    code, out, _ = ragctl(fake_portal, *argv)
    assert (code, out.splitlines()[1:]) == (
        0,
        [f"{J2}  failed  -      1/1       notes       1     INVALID_INPUT  {TIME}02Z"],
    )  # fmt: skip
    assert fake_portal.requests[-1].query == {
        "state": "failed",
        "collection": "notes",
        "limit": "5",
    }

    code, out, _ = ragctl(fake_portal, "--shared")
    assert (code, out) == (0, "no jobs\n")
    assert fake_portal.requests[-1].query == {"shared": "true", "limit": "50"}


def test_a_page_short_of_the_total_says_so(fake_portal: FakePortal) -> None:
    three_jobs(fake_portal)

    code, out, _ = ragctl(fake_portal, "--limit", "2")

    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:3]] == [J3, J2]
    assert out.splitlines()[3] == "2 of 3 jobs shown; --limit shows more"


def test_json_prints_the_servers_page(fake_portal: FakePortal) -> None:
    three_jobs(fake_portal)

    code, out, _ = ragctl(fake_portal, "--json")

    page = json.loads(out)
    assert code == 0
    assert (page["total"], page["limit"], page["offset"]) == (3, 50, 0)
    assert [job["id"] for job in page["jobs"]] == [J3, J2, J1]
    assert page["jobs"][1]["error"] == {
        "code": "INVALID_INPUT",
        "message": "Content too small to chunk",
    }
    assert page["jobs"][2]["results"] == [
        {"document_id": "doc1", "source": "a.md", "chunks_created": 1, "unchanged": False}
    ]


def test_watch_redraws_each_change_until_every_listed_job_has_ended(
    fake_portal: FakePortal, fake_time: FakeTime
) -> None:
    submit(fake_portal, "a.md")

    code, out, _ = ragctl(fake_portal, "--watch")

    tables = [table.splitlines() for table in out.split("\n\n")]
    assert code == 0
    assert all(table[0].split() == HEADER.split() for table in tables)
    assert [table[1].split()[1:4] for table in tables] == [
        ["running", "parsing", "0/1"],
        ["running", "embedding", "1/1"],
        ["running", "writing", "0/1"],
        ["succeeded", "-", "1/1"],
    ]
    assert fake_time.sleeps == [0.05, 0.1, 0.2]


def test_watch_on_a_terminal_erases_the_last_table_before_drawing_the_next(
    fake_portal: FakePortal,
) -> None:
    submit(fake_portal, "a.md")
    console, stdout, _ = make_console()
    stdout.isatty = lambda: True  # type: ignore[method-assign]

    code = run(["jobs", "--host", fake_portal.url(), "--token", "alice", "--watch"], console)

    assert code == 0
    assert stdout.getvalue().count("\x1b[2F\x1b[J") == 3
    assert "\n\n" not in stdout.getvalue()


def test_watch_with_nothing_running_returns_at_once(
    fake_portal: FakePortal, fake_time: FakeTime
) -> None:
    three_jobs(fake_portal)

    code, out, _ = ragctl(fake_portal, "--watch", "--state", "failed")

    assert (code, len(out.splitlines())) == (0, 2)
    assert fake_time.sleeps == []


def test_cancelling_a_queued_job_cancels_it_at_once(fake_portal: FakePortal) -> None:
    submit(fake_portal, "a.md")

    code, out, err = ragctl(fake_portal, "cancel", J1)

    assert (code, out, err) == (0, f"job\t{J1}\tcancelled\n", "")
    assert fake_portal.queue.jobs[0].state == "cancelled"
    assert fake_portal.routes()[-1] == f"POST /api/rag/jobs/{J1}/cancel"


def test_cancelling_a_running_job_stops_it_at_its_next_stage(fake_portal: FakePortal) -> None:
    submit(fake_portal, "a.md")
    read(fake_portal, J1)

    code, out, _ = ragctl(fake_portal, "cancel", J1)

    assert (code, out) == (0, f"job\t{J1}\trunning\tcancel requested: it stops at its next stage\n")
    assert read(fake_portal, J1)["state"] == "cancelled"
    assert fake_portal.documents == {}


def test_cancel_json_prints_the_servers_job(fake_portal: FakePortal) -> None:
    submit(fake_portal, "a.md")

    code, out, _ = ragctl(fake_portal, "cancel", J1, "--json")

    job = json.loads(out)
    assert code == 0
    assert (job["id"], job["state"], job["cancel_requested"]) == (J1, "cancelled", True)


def test_retrying_a_failed_job_queues_it_and_it_can_then_succeed(fake_portal: FakePortal) -> None:
    fake_portal.queue.errors["a.md"] = ("EXTERNAL_SERVICE_ERROR", "Embedding service down.")
    submit(fake_portal, "a.md")
    assert read(fake_portal, J1, times=3)["state"] == "failed"
    del fake_portal.queue.errors["a.md"]

    code, out, _ = ragctl(fake_portal, "retry", J1)

    assert (code, out) == (0, f"job\t{J1}\tqueued\n")
    assert read(fake_portal, J1, times=4)["state"] == "succeeded"
    assert fake_portal.sources("docs") == ["a.md"]


@pytest.mark.parametrize(
    ("action", "reads", "message"),
    [
        ("cancel", 4, "cancelling job {id} failed: HTTP 409: Job '{id}' has already ended "
         "(succeeded); only a queued or running job can be cancelled."),
        ("retry", 4, "retrying job {id} failed: HTTP 409: Job '{id}' is succeeded; only a "
         "failed or cancelled job can be retried."),
        ("retry", 0, "retrying job {id} failed: HTTP 409: Job '{id}' is queued; only a failed "
         "or cancelled job can be retried."),
    ],
)  # fmt: skip
def test_a_job_in_the_wrong_state_is_a_conflict(
    fake_portal: FakePortal, action: str, reads: int, message: str
) -> None:
    submit(fake_portal, "a.md")
    read(fake_portal, J1, times=reads)

    code, out, err = ragctl(fake_portal, action, J1)

    assert (code, out) == (1, "")
    assert err == f"error: {message.format(id=J1)}\n"


@pytest.mark.parametrize("action", ["cancel", "retry"])
def test_an_unknown_or_someone_elses_job_is_not_found(fake_portal: FakePortal, action: str) -> None:
    submit(fake_portal, "a.md", user="bob")
    verb = "cancelling" if action == "cancel" else "retrying"

    for key in (J1, "nope"):
        code, out, err = ragctl(fake_portal, action, key)

        assert (code, out) == (1, "")
        assert err == (
            f"error: {verb} job {key} failed: HTTP 404: Job '{key}' not found; GET "
            "/api/rag/jobs lists the jobs you can see.\n"
        )
    assert fake_portal.queue.jobs[0].state == "queued"


def test_a_typed_id_cannot_reach_another_route(fake_portal: FakePortal) -> None:
    code, _, _ = ragctl(fake_portal, "cancel", "../../auth/login")

    assert code == 1
    assert fake_portal.routes() == ["POST /api/rag/jobs/..%2F..%2Fauth%2Flogin/cancel"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cancel"], "error: jobs cancel needs the job's ID\n"),
        (["retry", " "], "error: jobs retry needs the job's ID\n"),
        (["retry", J1, "--state", "failed", "--watch"], "error: --state, --watch only go with "
         "listing jobs, not retry\n"),
        (["--watch", "--json"], "error: --watch redraws a table; leave out --json\n"),
    ],
)  # fmt: skip
def test_arguments_that_do_not_fit_fail_before_any_request(argv: list[str], message: str) -> None:
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["jobs", "--token", "alice", *argv], console)

    assert (code, stdout.getvalue(), stderr.getvalue()) == (1, "", message)


@pytest.mark.parametrize(
    "argv", [["pause", J1], ["--limit", "0"], ["--limit", "1001"], ["--state", "done"]]
)
def test_bad_arguments_are_usage_errors(argv: list[str]) -> None:
    console, _, stderr = make_console(transport=ForbiddenTransport())

    assert run(["jobs", *argv], console) == 2
    assert stderr.getvalue().startswith("usage: ragctl jobs ")


def test_jobs_logs_in_like_the_other_commands(fake_portal: FakePortal) -> None:
    submit(fake_portal, "a.md", user="bob")
    argv = ["jobs", "--host", fake_portal.url("acme.localhost"), "--user", "bob@acme.test"]

    assert main([*argv, "--password", PASSWORD, "--json"]) == 0
    assert fake_portal.routes()[1:] == ["POST /api/auth/login", "GET /api/rag/jobs"]
    assert fake_portal.requests[-1].authorization == "Bearer bob"


def test_jobs_reads_host_and_token_from_the_environment(
    fake_portal: FakePortal, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    submit(fake_portal, "a.md", user="bob")
    monkeypatch.setenv("RAG_HOST", fake_portal.url("globex.localhost"))
    monkeypatch.setenv("RAG_TOKEN", "bob")

    assert main(["jobs", "cancel", J1]) == 0
    assert capsys.readouterr().out == f"job\t{J1}\tcancelled\n"
    assert fake_portal.requests[-1].host == f"globex.localhost:{fake_portal.port}"
