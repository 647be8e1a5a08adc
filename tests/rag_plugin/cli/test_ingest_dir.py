"""ragctl ingest-dir's real runs against the fake portal: what is sent and reported (SPEC X1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_plugin.cli import main, run
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    expected_run_output,
    ingest_argv,
    make_console,
    make_docs,
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
