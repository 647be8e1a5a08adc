"""ragctl against the real portal (gunicorn + PostgreSQL), over HTTP to acme.localhost.

ingest-dir submits ingestion jobs, so a real ``manage.py rag_worker`` runs them for the whole
module (as in tests/portal/api/test_jobs.py).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from portal import launch
from rag_plugin.cli import main, run
from rag_plugin.cli.console import Console
from tests.conftest import LOGS, PortalServer

ACME = "acme.localhost"
JOB = re.compile(r"/api/rag/jobs/[0-9a-f-]{36}")

# Every file is over the chunker's 20-character minimum and under one 200-word window.
TUNING = "# Tuning\n\nRaise ef_search on the pgvector HNSW index for better recall.\n"
INTRO = "Getting started: install the portal and log in with your tenant account.\n"
NOTES = "Release notes for version one of the retrieval portal.\n"
DATA = '{"question": "What is hybrid search?", "answer": "RRF fusion."}\n'


@pytest.fixture(scope="module", autouse=True)
def worker(portal_server: PortalServer) -> Iterator[None]:
    """The ingestion worker that runs ragctl's jobs."""
    with launch.worker(portal_server.env, LOGS / "worker-test-cli-portal.log"):
        yield


@pytest.fixture
def source(portal_server: PortalServer) -> str:
    """A collection name allowlisted for this test only, so tests never share data."""
    return portal_server.new_source()


def make_docs(root: Path) -> Path:
    """Nested folders, upper-case extensions, one invalid-UTF-8 file and one blank file."""
    docs = root / "docs"
    (docs / "guide" / "advanced").mkdir(parents=True)
    (docs / "guide" / "advanced" / "TUNING.MD").write_text(TUNING)
    (docs / "guide" / "getting_started.md").write_text(INTRO)
    (docs / "release-notes.TXT").write_text(NOTES)
    (docs / "faq.jsonl").write_text(DATA)
    (docs / "latin1.md").write_bytes(b"caf\xe9 au lait, encoded as Latin-1\n")
    (docs / "blank.txt").write_text(" \n\t\n")
    return docs


def ingest_argv(server: PortalServer, collection: str, docs: Path, *extra: str) -> list[str]:
    return [
        "ingest-dir",
        "--host",
        server.url_for(ACME),
        "--collection",
        collection,
        "--docs-path",
        str(docs),
        # A worker that does not run its jobs fails the test in a minute, not an hour.
        "--wait-timeout",
        "120",
        *extra,
    ]


def login(server: PortalServer, user: str = "alice") -> list[str]:
    return ["--user", user, "--password", server.password]


def stored_documents(server: PortalServer, collection: str) -> list[dict[str, Any]]:
    """The collection's documents as the API lists them, sorted by source; [] if no collection."""
    with server.api(ACME, "alice") as api:
        response = api.get(f"/api/rag/collections/{collection}/documents")
    if response.status_code == 404:
        return []
    assert response.status_code == 200, response.text
    documents: list[dict[str, Any]] = response.json()["documents"]
    return sorted(documents, key=lambda document: document["source"])


def collection_names(server: PortalServer) -> list[str]:
    with server.api(ACME, "alice") as api:
        response = api.get("/api/rag/collections")
    assert response.status_code == 200, response.text
    return [item["name"] for item in response.json()]


class Recording(httpx.BaseTransport):
    """Sends every request on to the server and keeps the paths, to see which routes ran."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def run_recording(argv: Sequence[str]) -> tuple[int, list[str]]:
    """Run ragctl on the process's (captured) streams; the exit status and the paths sent,
    the polls of jobs shown as ``/api/rag/jobs/ID`` once for each job."""
    recording = Recording()
    code = run(argv, Console(sys.stdout, sys.stderr, transport=recording))
    paths: list[str] = []
    for path in recording.paths:
        shown = "/api/rag/jobs/ID" if JOB.fullmatch(path) else path
        if not (shown == "/api/rag/jobs/ID" and paths and paths[-1] == shown):
            paths.append(shown)
    return code, paths


UNREADABLE = (
    "skipped\t{docs}/blank.txt\tempty (only whitespace)\n"
    "skipped\t{docs}/latin1.md\t'utf-8' codec can't decode byte 0xe9 in position 3: invalid "
    "continuation byte\n"
)
"""What make_docs' folder prints on stderr first: the files not ingested, with why."""


def test_dry_run_is_byte_exact_and_writes_nothing(
    tmp_path: Path,
    portal_server: PortalServer,
    source: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = make_docs(tmp_path)

    code = main(ingest_argv(portal_server, source, docs, *login(portal_server), "--dry-run"))

    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == (
        f"{docs}/faq.jsonl\tfaq\t64 bytes\n"
        f"{docs}/guide/advanced/TUNING.MD\tTuning\t72 bytes\n"
        f"{docs}/guide/getting_started.md\tgetting started\t73 bytes\n"
        f"{docs}/release-notes.TXT\trelease notes\t55 bytes\n"
        "dry_run=true documents=4\n"
    )
    assert captured.err == UNREADABLE.format(docs=docs)
    assert source not in collection_names(portal_server)


def test_bad_docs_path_fails_before_login(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"

    code = main(ingest_argv(portal_server, source, missing, *login(portal_server)))

    captured = capsys.readouterr()
    assert code == 1
    assert (captured.out, captured.err) == (
        "",
        f"error: docs path is not a directory: {missing}\n",
    )
    assert source not in collection_names(portal_server)


def test_wrong_password_writes_no_document(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    argv = ingest_argv(portal_server, source, docs, "--user", "alice", "--password", "wrong")

    code = main(argv)

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.startswith(UNREADABLE.format(docs=docs) + "error: login failed: HTTP 401: ")
    assert captured.err.count("\n") == 3
    assert stored_documents(portal_server, source) == []
    assert source not in collection_names(portal_server)


EXPECTED_RUN = (
    "ingested\t{docs}/faq.jsonl\t1 chunks\n"
    "ingested\t{docs}/guide/advanced/TUNING.MD\t1 chunks\n"
    "ingested\t{docs}/guide/getting_started.md\t1 chunks\n"
    "ingested\t{docs}/release-notes.TXT\t1 chunks\n"
    "summary\tdocuments=4 succeeded=4 failed=0 chunks=4\n"
)


def test_mixed_folder_is_ingested_with_relative_sources_and_titles(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)

    argv = ingest_argv(portal_server, source, docs, *login(portal_server), "--tag", "cli")
    code, paths = run_recording(argv)

    captured = capsys.readouterr()
    assert code == 0
    assert paths == ["/api/auth/login", "/api/rag/ingest/batch", "/api/rag/jobs/ID"]
    assert captured.out == EXPECTED_RUN.format(docs=docs)
    assert captured.err == UNREADABLE.format(docs=docs)
    assert [
        (document["source"], document["title"], document["tags"], document["chunk_count"])
        for document in stored_documents(portal_server, source)
    ] == [
        ("faq.jsonl", "faq", ["cli"], 1),
        ("guide/advanced/TUNING.MD", "Tuning", ["cli"], 1),
        ("guide/getting_started.md", "getting started", ["cli"], 1),
        ("release-notes.TXT", "release notes", ["cli"], 1),
    ]


def test_rerun_does_not_duplicate_documents(
    tmp_path: Path,
    portal_server: PortalServer,
    source: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = make_docs(tmp_path)
    assert main(ingest_argv(portal_server, source, docs, *login(portal_server))) == 0
    first = stored_documents(portal_server, source)
    capsys.readouterr()

    # Second run names the folder relatively: the sources must not depend on that spelling.
    monkeypatch.chdir(tmp_path)
    code = main(ingest_argv(portal_server, source, Path("docs"), *login(portal_server)))

    assert code == 0
    # The portal found every document as it holds it: nothing was written again.
    assert capsys.readouterr().out == (
        EXPECTED_RUN.format(docs="docs")
        .replace("ingested\t", "unchanged\t")
        .replace("chunks=4\n", "chunks=4 unchanged=4\n")
    )
    second = stored_documents(portal_server, source)
    assert [document["source"] for document in second] == [document["source"] for document in first]
    assert len(second) == 4
    with portal_server.api(ACME, "alice") as api:
        listed = {item["name"]: item for item in api.get("/api/rag/collections").json()}
    assert (listed[source]["document_count"], listed[source]["chunk_count"]) == (4, 4)


def test_document_the_server_rejects_is_reported_and_fails_the_run(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text(INTRO)
    (docs / "tiny.md").write_text("too short\n")  # under the 20-character chunk minimum

    code, paths = run_recording(ingest_argv(portal_server, source, docs, *login(portal_server)))

    captured = capsys.readouterr()
    assert code == 1
    # The portal checks the size at submit: it refuses the batch as a whole, and then the
    # small document, before any job; the good one goes on its own as a job.
    assert paths == [
        "/api/auth/login",
        "/api/rag/ingest/batch",
        "/api/rag/ingest",
        "/api/rag/ingest",
        "/api/rag/jobs/ID",
    ]
    assert captured.out == (
        f"ingested\t{docs}/ok.md\t1 chunks\nsummary\tdocuments=2 succeeded=1 failed=1 chunks=1\n"
    )
    assert captured.err.splitlines() == [
        f"failed\t{docs}/tiny.md\tHTTP 400: Content too small to chunk",
        "error: 1 document(s) failed ingestion",
    ]
    assert [document["source"] for document in stored_documents(portal_server, source)] == ["ok.md"]


def test_search_prints_ranked_results_matching_the_json(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    assert main(ingest_argv(portal_server, source, docs, *login(portal_server))) == 0
    capsys.readouterr()
    search = [
        "search",
        "--host",
        portal_server.url_for(ACME),
        *login(portal_server),
        "--collection",
        source,
        "--query",
        "pgvector recall",
        "--strategy",
        "bm25",
        "--top-k",
        "2",
    ]

    assert main([*search, "--json"]) == 0
    response = json.loads(capsys.readouterr().out)
    assert main(search) == 0
    readable = capsys.readouterr().out.splitlines()

    top = response["results"][0]
    meta = top["metadata"]
    assert response["strategy"] == "bm25"
    assert (meta["source"], meta["title"], meta["chunk_index"]) == (
        "guide/advanced/TUNING.MD",
        "Tuning",
        0,
    )
    assert TUNING[meta["start_offset"] : meta["end_offset"]] == top["content"]
    count = len(response["results"])
    assert re.fullmatch(
        rf"{count} results? for 'pgvector recall' \(strategy=bm25, [0-9.]+ ms\)", readable[0]
    )
    assert readable[1:5] == [
        "",
        f"1. Tuning  [score {top['score']:.6f}]",
        f"   source: guide/advanced/TUNING.MD  chars {meta['start_offset']}-"
        f"{meta['end_offset']}  chunk 0  id {top['id']}",
        "   # Tuning Raise ef_search on the pgvector HNSW index for better recall.",
    ]


def test_search_in_a_collection_that_does_not_exist_fails_with_404(
    portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "--host", portal_server.url_for(ACME), *login(portal_server)]

    code = main([*argv, "--collection", source, "--query", "anything"])

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.startswith("error: search failed: HTTP 404: ")
    assert source in captured.err


def test_jobs_lists_the_run_and_an_ended_job_cannot_be_cancelled(
    tmp_path: Path, portal_server: PortalServer, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)
    assert main(ingest_argv(portal_server, source, docs, *login(portal_server))) == 0
    capsys.readouterr()
    jobs = ["jobs", "--host", portal_server.url_for(ACME), *login(portal_server)]

    assert main([*jobs, "--collection", source, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    (job,) = listed["jobs"]
    assert (job["state"], job["collection"], job["kind"], job["documents"]) == (
        "succeeded",
        source,
        "batch",
        4,
    )
    assert sorted(result["source"] for result in job["results"]) == [
        "faq.jsonl",
        "guide/advanced/TUNING.MD",
        "guide/getting_started.md",
        "release-notes.TXT",
    ]
    assert main([*jobs, "--collection", source]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [
        "ID", "STATE", "STAGE", "PROGRESS", "COLLECTION", "DOCS", "ERROR", "CREATED"
    ]  # fmt: skip
    assert table[1].split()[:2] == [job["id"], "succeeded"]

    assert main([*jobs, "cancel", job["id"]]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: cancelling job {job['id']} failed: HTTP 409: ")
