"""ragctl ingest-dir against a real HTTP server on loopback (SPEC X1)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli import main, run
from rag_plugin.cli.console import Console
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal


class ForbiddenTransport(httpx.BaseTransport):
    """Fails the test on any request: for paths that must not touch the network."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        pytest.fail(f"unexpected request {request.method} {request.url}")


class TerminalStream(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def make_console(
    *,
    terminal: bool = False,
    transport: httpx.BaseTransport | None = None,
    prompt: Callable[[str], str] | None = None,
) -> tuple[Console, io.StringIO, io.StringIO]:
    """A console writing into two captured streams (stderr a fake terminal if asked)."""
    stdout, stderr = io.StringIO(), TerminalStream() if terminal else io.StringIO()
    return Console(stdout, stderr, transport=transport, prompt=prompt), stdout, stderr


def make_docs(root: Path) -> Path:
    """Nested folders, upper-case extensions, one invalid-UTF-8 file, one blank file."""
    docs = root / "docs"
    (docs / "guide" / "advanced").mkdir(parents=True)
    (docs / "guide" / "intro.md").write_text("# Getting Started\n\nInstall ragctl.\n")
    (docs / "guide" / "advanced" / "TUNING.MD").write_text("Tune the index.\n\nThen search.\n")
    (docs / "release_notes.TXT").write_text("Version one.\n")
    (docs / "data.jsonl").write_text('{"a": 1}\n')
    (docs / "broken.md").write_bytes(b"caf\xe9 latin-1\n")
    (docs / "blank.txt").write_text("  \n\n")
    (docs / "picture.png").write_bytes(b"\x89PNG")
    return docs


UNSUPPORTED = (
    "not a file ragctl ingests (.md .markdown .txt .text .json .jsonl .pdf .docx .html .htm, "
    "or a PDF or HTML file by its first bytes)"
)
BROKEN_NOTE = (
    "skipped\t{docs}/blank.txt\tempty (only whitespace)\n"
    "skipped\t{docs}/broken.md\t'utf-8' codec can't decode byte 0xe9 in position 3: invalid "
    "continuation byte\n"
    f"skipped\t{{docs}}/picture.png\t{UNSUPPORTED}\n"
)
"""What make_docs' folder prints on stderr first: every file not ingested, with why."""


def ingest_argv(portal: FakePortal, docs: Path, *extra: str) -> list[str]:
    return [
        "ingest-dir",
        "--host",
        portal.url("acme.localhost"),
        "--collection",
        "docs",
        "--docs-path",
        str(docs),
        *extra,
    ]


def test_dry_run_prints_exact_plan_and_makes_no_request(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)

    code = main(ingest_argv(fake_portal, docs, "--dry-run"))

    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == (
        f"{docs}/data.jsonl\tdata\t9 bytes\n"
        f"{docs}/guide/advanced/TUNING.MD\tTUNING\t30 bytes\n"
        f"{docs}/guide/intro.md\tGetting Started\t35 bytes\n"
        f"{docs}/release_notes.TXT\trelease notes\t13 bytes\n"
        "dry_run=true documents=4\n"
    )
    assert captured.err == BROKEN_NOTE.format(docs=docs)
    assert fake_portal.requests == []


def test_dry_run_needs_no_credentials_and_no_network(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["ingest-dir", "--collection", "c", "--docs-path", str(docs), "--dry-run"], console)

    assert code == 0
    assert stdout.getvalue().endswith("dry_run=true documents=4\n")
    assert stderr.getvalue() == BROKEN_NOTE.format(docs=docs)


def test_dry_run_json_lists_documents_skipped_and_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)

    code = main(
        ["ingest-dir", "--collection", "c", "--docs-path", str(docs), "--dry-run", "--json"]
    )

    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["dry_run"] is True
    assert report["documents"][1] == {
        "path": f"{docs}/guide/advanced/TUNING.MD",
        "source": "guide/advanced/TUNING.MD",
        "title": "TUNING",
        "bytes": 30,
    }
    assert [item["source"] for item in report["documents"]] == [
        "data.jsonl",
        "guide/advanced/TUNING.MD",
        "guide/intro.md",
        "release_notes.TXT",
    ]
    assert report["skipped"] == [
        {"path": f"{docs}/blank.txt", "reason": "empty (only whitespace)"},
        {
            "path": f"{docs}/broken.md",
            "reason": "'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation "
            "byte",
        },
        {
            "path": f"{docs}/picture.png",
            "reason": UNSUPPORTED,
        },
    ]
    assert report["empty"] == [f"{docs}/blank.txt"]
    assert report["summary"] == {"documents": 4}


@pytest.mark.parametrize(
    "auth", [["--dry-run"], ["--token", "alice"], ["--user", "alice", "--password", PASSWORD]]
)
def test_bad_docs_path_fails_before_any_login_or_request(tmp_path: Path, auth: list[str]) -> None:
    missing = tmp_path / "nope"
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["ingest-dir", "--collection", "c", "--docs-path", str(missing), *auth], console)

    assert code == 1
    assert stdout.getvalue() == ""
    assert stderr.getvalue() == (f"error: docs path is not a directory: {missing}\n")


def test_folder_without_documents_fails_before_any_request(tmp_path: Path) -> None:
    (tmp_path / "only.png").write_bytes(b"png")
    console, _stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["ingest-dir", "--collection", "c", "--docs-path", str(tmp_path)], console)

    assert code == 1
    assert stderr.getvalue() == (
        f"skipped\t{tmp_path}/only.png\t{UNSUPPORTED}\n"
        f"error: no ingestible documents found under {tmp_path}\n"
    )


def test_wrong_password_stops_before_any_ingest(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)

    code = main(ingest_argv(fake_portal, docs, "--user", "alice", "--password", "wrong"))

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err == (
        BROKEN_NOTE.format(docs=docs) + "error: login failed: HTTP 401: Invalid credentials\n"
    )
    assert fake_portal.routes() == ["POST /api/auth/login"]
    assert fake_portal.documents == {}


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ([], "error: --user is required unless --token is provided or $RAG_TOKEN is set\n"),
        (["--password", PASSWORD], "error: --user is required unless --token is provided "
         "or $RAG_TOKEN is set\n"),
        (["--user", "alice"], "error: --password is required unless --token is provided\n"),
    ],
)  # fmt: skip
def test_missing_credentials_fail_without_a_request(
    tmp_path: Path, auth: list[str], message: str
) -> None:
    docs = make_docs(tmp_path)
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["ingest-dir", "--collection", "c", "--docs-path", str(docs), *auth], console)

    assert code == 1
    assert stdout.getvalue() == ""
    assert stderr.getvalue() == BROKEN_NOTE.format(docs=docs) + message


def test_password_is_prompted_for_on_a_terminal(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = make_docs(tmp_path)
    prompts: list[str] = []

    def prompt(text: str) -> str:
        prompts.append(text)
        return PASSWORD

    console, _, _ = make_console(prompt=prompt)
    code = run(ingest_argv(fake_portal, docs, "--user", "alice"), console)

    assert code == 0
    assert prompts == ["Password for alice: "]
    assert fake_portal.requests[0].body == {"username": "alice", "password": PASSWORD}


def expected_run_output(docs: Path) -> str:
    return (
        f"ingested\t{docs}/data.jsonl\t1 chunks\n"
        f"ingested\t{docs}/guide/advanced/TUNING.MD\t2 chunks\n"
        f"ingested\t{docs}/guide/intro.md\t2 chunks\n"
        f"ingested\t{docs}/release_notes.TXT\t1 chunks\n"
        "summary\tdocuments=4 succeeded=4 failed=0 chunks=6\n"
    )


def test_real_run_ingests_each_document_with_relative_source(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    argv = ingest_argv(fake_portal, docs, "--user", "alice", "--password", PASSWORD)

    code = main([*argv, "--tag", "manual", "--tag", "v1", "--chunking-strategy", "semantic"])

    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == expected_run_output(docs)
    assert captured.err == BROKEN_NOTE.format(docs=docs)
    # One batch job, polled until it has gone through its stages and succeeded.
    assert fake_portal.routes() == [
        "POST /api/auth/login",
        "POST /api/rag/ingest/batch",
        *[f"GET /api/rag/jobs/{job_id(1)}"] * 4,
    ]
    assert [job.state for job in fake_portal.queue.jobs] == ["succeeded"]
    assert {request.host for request in fake_portal.requests} == {
        f"acme.localhost:{fake_portal.port}"
    }
    assert {request.authorization for request in fake_portal.requests[1:]} == {"Bearer alice"}
    assert fake_portal.requests[1].body == {
        "collection": "docs",
        "documents": [
            {
                "content": '{"a": 1}\n',
                "title": "data",
                "source": "data.jsonl",
                "tags": ["manual", "v1"],
            },
            {
                "content": "Tune the index.\n\nThen search.\n",
                "title": "TUNING",
                "source": "guide/advanced/TUNING.MD",
                "tags": ["manual", "v1"],
            },
            {
                "content": "# Getting Started\n\nInstall ragctl.\n",
                "title": "Getting Started",
                "source": "guide/intro.md",
                "tags": ["manual", "v1"],
            },
            {
                "content": "Version one.\n",
                "title": "release notes",
                "source": "release_notes.TXT",
                "tags": ["manual", "v1"],
            },
        ],
        "chunking_strategy": "semantic",
        "async": True,
    }


def test_batch_size_one_sends_each_document_on_its_own(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    argv = ingest_argv(fake_portal, docs, "--user", "alice", "--password", PASSWORD)

    code = main([*argv, "--tag", "manual", "--tag", "v1", "--chunking-strategy", "semantic",
                 "--batch-size", "1"])  # fmt: skip

    assert code == 0
    assert capsys.readouterr().out == expected_run_output(docs)
    # Four jobs of one document each, all submitted before the first poll.
    assert fake_portal.routes()[:5] == ["POST /api/auth/login"] + ["POST /api/rag/ingest"] * 4
    assert sorted(set(fake_portal.polls())) == [job_id(number) for number in (1, 2, 3, 4)]
    assert [job.state for job in fake_portal.queue.jobs] == ["succeeded"] * 4
    assert fake_portal.requests[2].authorization == "Bearer alice"
    assert fake_portal.requests[2].body == {
        "collection": "docs",
        "content": "Tune the index.\n\nThen search.\n",
        "title": "TUNING",
        "source": "guide/advanced/TUNING.MD",
        "tags": ["manual", "v1"],
        "chunking_strategy": "semantic",
        "async": True,
    }


def test_rerun_from_another_directory_replaces_instead_of_duplicating(
    tmp_path: Path,
    fake_portal: FakePortal,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = make_docs(tmp_path)
    main(ingest_argv(fake_portal, docs, "--token", "alice"))
    first = dict(fake_portal.documents)
    capsys.readouterr()

    # The same folder named relatively: sources must not change with the spelling of the path.
    monkeypatch.chdir(tmp_path)
    code = main(ingest_argv(fake_portal, Path("docs"), "--token", "alice"))

    assert code == 0
    assert capsys.readouterr().out == expected_run_output(Path("docs"))
    assert fake_portal.sources("docs") == [
        "data.jsonl",
        "guide/advanced/TUNING.MD",
        "guide/intro.md",
        "release_notes.TXT",
    ]
    assert {key: doc.document_id for key, doc in first.items()} != {
        key: doc.document_id for key, doc in fake_portal.documents.items()
    }
    assert fake_portal.documents.keys() == first.keys()


def test_failed_documents_are_reported_and_make_the_exit_status_non_zero(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.refuse["guide/intro.md"] = 413

    code = main(ingest_argv(fake_portal, docs, "--token", "alice"))

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == (
        f"ingested\t{docs}/data.jsonl\t1 chunks\n"
        f"ingested\t{docs}/guide/advanced/TUNING.MD\t2 chunks\n"
        f"ingested\t{docs}/release_notes.TXT\t1 chunks\n"
        "summary\tdocuments=4 succeeded=3 failed=1 chunks=4\n"
    )
    assert captured.err == (
        BROKEN_NOTE.format(docs=docs)
        + f"failed\t{docs}/guide/intro.md\tHTTP 413: refused guide/intro.md\n"
        + "error: 1 document(s) failed ingestion\n"
    )
    assert fake_portal.sources("docs") == [
        "data.jsonl",
        "guide/advanced/TUNING.MD",
        "release_notes.TXT",
    ]
    # The batch was refused as a whole, so each document was sent again on its own.
    assert fake_portal.ingests() == [
        ("/api/rag/ingest/batch", ["data.jsonl", "guide/advanced/TUNING.MD", "guide/intro.md",
                                   "release_notes.TXT"]),
        ("/api/rag/ingest", ["data.jsonl"]),
        ("/api/rag/ingest", ["guide/advanced/TUNING.MD"]),
        ("/api/rag/ingest", ["guide/intro.md"]),
        ("/api/rag/ingest", ["release_notes.TXT"]),
    ]  # fmt: skip
    assert len(fake_portal.queue.jobs) == 3


def test_json_run_reports_every_document_outcome(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.refuse["data.jsonl"] = 500

    code = main(ingest_argv(fake_portal, docs, "--token", "alice", "--json"))

    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1
    assert report["dry_run"] is False
    assert report["documents"][:2] == [
        {
            "path": f"{docs}/data.jsonl",
            "source": "data.jsonl",
            "title": "data",
            "bytes": 9,
            "status": "failed",
            "http_status": 500,
            "error": "refused data.jsonl",
            "code": "INTERNAL_ERROR",
        },
        {
            "path": f"{docs}/guide/advanced/TUNING.MD",
            "source": "guide/advanced/TUNING.MD",
            "title": "TUNING",
            "bytes": 30,
            "status": "ingested",
            "chunks": 2,
            "document_id": "doc1",
            "job_id": job_id(1),
            "unchanged": False,
        },
    ]
    assert report["summary"] == {
        "documents": 4,
        "succeeded": 3,
        "failed": 1,
        "pending": 0,
        "chunks": 5,
        "unchanged": 0,
    }
    assert report["jobs"] == [
        {"job_id": job_id(number), "state": "succeeded", "documents": 1, "reason": "requested"}
        for number in (1, 2, 3)
    ]
    assert "\r" not in captured.err


def test_token_and_host_come_from_the_environment(
    tmp_path: Path,
    fake_portal: FakePortal,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = make_docs(tmp_path)
    monkeypatch.setenv("RAG_HOST", fake_portal.url("globex.localhost") + "/")
    monkeypatch.setenv("RAG_TOKEN", "bob")

    code = main(["ingest-dir", "--collection", "docs", "--docs-path", str(docs)])

    assert code == 0
    assert fake_portal.routes()[0] == "POST /api/rag/ingest/batch"
    assert fake_portal.polls() == [job_id(1)] * 4
    assert {(r.host, r.authorization) for r in fake_portal.requests} == {
        (f"globex.localhost:{fake_portal.port}", "Bearer bob")
    }


def test_explicit_user_wins_over_token_in_the_environment(
    tmp_path: Path, fake_portal: FakePortal, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = make_docs(tmp_path)
    monkeypatch.setenv("RAG_TOKEN", "bob")

    code = main(ingest_argv(fake_portal, docs, "--user", "alice", "--password", PASSWORD))

    assert code == 0
    assert fake_portal.routes()[0] == "POST /api/auth/login"
    assert fake_portal.requests[1].authorization == "Bearer alice"


def test_progress_bar_only_on_a_terminal(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = make_docs(tmp_path)
    terminal, terminal_out, terminal_err = make_console(terminal=True)
    piped, piped_out, piped_err = make_console()

    assert run(ingest_argv(fake_portal, docs, "--token", "alice"), terminal) == 0
    assert run(ingest_argv(fake_portal, docs, "--token", "alice"), piped) == 0

    assert "0/4" in terminal_err.getvalue()
    assert "\r" in terminal_err.getvalue()
    assert piped_err.getvalue() == BROKEN_NOTE.format(docs=docs)
    assert terminal_out.getvalue() == piped_out.getvalue() == expected_run_output(docs)


def test_module_entry_point_runs_a_dry_run(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)

    result = subprocess.run(
        [sys.executable, "-m", "rag_plugin.cli", "ingest-dir", "--collection", "c",
         "--docs-path", str(docs), "--dry-run"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "dry_run=true documents=4"


@pytest.mark.parametrize(
    "argv",
    [
        ["ingest-dir", "--docs-path", "x"],
        ["ingest-dir", "--collection", "c", "--docs-path", "x", "--chunking-strategy", "para"],
        ["search", "--collection", "c", "--query", "q", "--top-k", "0"],
        ["search", "--collection", "c", "--query", "q", "--strategy", "magic"],
        ["frobnicate"],
    ],
)
def test_bad_arguments_exit_2_with_usage_on_stderr(argv: list[str]) -> None:
    console, _stdout, stderr = make_console(transport=ForbiddenTransport())

    assert run(argv, console) == 2
    assert "usage: ragctl" in stderr.getvalue()


def test_metadata_options_go_on_every_document(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha text.\n")
    (docs / "b.md").write_text("Beta text.\n")
    argv = ["ingest-dir", "--host", fake_portal.url("acme.localhost"), "--token", "alice"]
    argv += ["--collection", "docs", "--docs-path", str(docs)]
    assert main([*argv, "--metadata", "year=2024", "--metadata", "team=search"]) == 0
    sent = fake_portal.requests[0].body
    assert [d["metadata"] for d in sent["documents"]] == [{"year": 2024, "team": "search"}] * 2
