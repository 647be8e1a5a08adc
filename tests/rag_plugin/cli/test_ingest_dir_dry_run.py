"""ragctl ingest-dir's dry run, and the mistakes it reports before any request (SPEC X1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_plugin.cli import main, run
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    UNSUPPORTED,
    ForbiddenTransport,
    ingest_argv,
    make_console,
    make_docs,
)


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
