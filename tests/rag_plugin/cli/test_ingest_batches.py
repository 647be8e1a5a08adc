"""ragctl ingest-dir sends documents in batches, falling back to one request per document."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli import main, run
from rag_plugin.cli.batching import MAX_BATCH_BYTES, plan_batches
from rag_plugin.cli.client import document_fields, encoded_size
from rag_plugin.cli.discovery import Document
from tests.rag_plugin.cli.fake_portal import FakePortal, running_fake_portal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    DATA,
    INTRO,
    NOTES,
    TUNING,
    ForbiddenTransport,
    expected_run_output,
    ingest_argv,
    make_console,
    make_docs,
)

BATCH = "/api/rag/ingest/batch"
SINGLE = "/api/rag/ingest"


def document(name: str, content: str = "text") -> Document:
    return Document(Path(name), name, name, content, len(content.encode()))


@pytest.mark.parametrize(
    ("sizes", "max_documents", "max_bytes", "expected"),
    [
        ({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, 2, 100, ["ab", "cd", "e"]),
        ({"a": 1, "b": 1, "c": 1}, 1, 100, ["a", "b", "c"]),
        ({"a": 1, "b": 1, "c": 1}, 20, 100, ["abc"]),
        # Exactly the budget still fits; one byte more starts a new batch.
        ({"a": 40, "b": 60, "c": 1}, 20, 100, ["ab", "c"]),
        ({"a": 40, "b": 61, "c": 1}, 20, 100, ["a", "bc"]),
        # A document over the budget travels alone, between its neighbours' batches.
        ({"a": 10, "b": 10, "c": 101, "d": 10, "e": 10}, 20, 100, ["ab", "c", "de"]),
        ({"a": 101}, 20, 100, ["a"]),
        ({}, 20, 100, []),
    ],
)
def test_plan_batches_keeps_order_and_both_limits(
    sizes: dict[str, int], max_documents: int, max_bytes: int, expected: list[str]
) -> None:
    documents = [document(name) for name in sizes]

    batches = plan_batches(
        documents,
        max_documents=max_documents,
        max_bytes=max_bytes,
        size=lambda item: sizes[item.source],
    )

    assert ["".join(item.source for item in batch) for batch in batches] == expected


@pytest.mark.parametrize(
    ("batch_size", "expected"),
    [
        ("1", [(SINGLE, [DATA]), (SINGLE, [TUNING]), (SINGLE, [INTRO]), (SINGLE, [NOTES])]),
        ("2", [(BATCH, [DATA, TUNING]), (BATCH, [INTRO, NOTES])]),
        # A last group of one goes through the single-document route.
        ("3", [(BATCH, [DATA, TUNING, INTRO]), (SINGLE, [NOTES])]),
        ("4", [(BATCH, [DATA, TUNING, INTRO, NOTES])]),
        ("100", [(BATCH, [DATA, TUNING, INTRO, NOTES])]),
    ],
)
def test_documents_are_grouped_by_batch_size_with_unchanged_output(
    tmp_path: Path,
    fake_portal: FakePortal,
    capsys: pytest.CaptureFixture[str],
    batch_size: str,
    expected: list[tuple[str, list[str]]],
) -> None:
    docs = make_docs(tmp_path)

    code = main(ingest_argv(fake_portal, docs, "--token", "alice", "--batch-size", batch_size))

    captured = capsys.readouterr()
    assert code == 0
    assert fake_portal.ingests() == expected
    assert captured.out == expected_run_output(docs)
    assert captured.err == BROKEN_NOTE.format(docs=docs)
    assert fake_portal.sources("docs") == [DATA, TUNING, INTRO, NOTES]


def without_jobs(report: str) -> dict[str, object]:
    """A --json report less what depends on how the documents were grouped into jobs."""
    parsed = json.loads(report)
    del parsed["jobs"]
    for document in parsed["documents"]:
        document.pop("job_id", None)
    return parsed


@pytest.mark.parametrize("refused", [{}, {INTRO: 400}, {DATA: 500, NOTES: 413}])
@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.usefixtures("fake_time")
def test_batched_output_is_identical_to_the_per_document_output(
    tmp_path: Path, refused: dict[str, int], as_json: bool
) -> None:
    docs = make_docs(tmp_path)
    outputs = []
    for batch_size in ("1", "20"):
        with running_fake_portal() as portal:
            portal.refuse.update(refused)
            argv = ingest_argv(portal, docs, "--token", "alice", "--batch-size", batch_size)
            console, stdout, stderr = make_console()
            code = run([*argv, *(["--json"] if as_json else [])], console)
            out = without_jobs(stdout.getvalue()) if as_json else stdout.getvalue()
            outputs.append((code, out, stderr.getvalue(), portal.documents))

    per_document, batched = outputs
    assert batched == per_document
    assert per_document[0] == (1 if refused else 0)
    assert sorted(source for _, source in per_document[3]) == sorted(
        {DATA, TUNING, INTRO, NOTES} - refused.keys()
    )


@pytest.mark.parametrize("status", [400, 413, 500])
def test_batch_with_one_bad_document_falls_back_and_fails_only_that_document(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.refuse[TUNING] = status

    code = main(ingest_argv(fake_portal, docs, "--token", "alice", "--json"))

    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert fake_portal.ingests() == [
        (BATCH, [DATA, TUNING, INTRO, NOTES]),
        (SINGLE, [DATA]),
        (SINGLE, [TUNING]),
        (SINGLE, [INTRO]),
        (SINGLE, [NOTES]),
    ]
    # The refused batch wrote nothing: ids count only the three single requests that succeeded.
    assert [
        (item["source"], item["status"], item.get("document_id"), item.get("http_status"))
        for item in report["documents"]
    ] == [
        (DATA, "ingested", "doc1", None),
        (TUNING, "failed", None, status),
        (INTRO, "ingested", "doc2", None),
        (NOTES, "ingested", "doc3", None),
    ]
    assert report["documents"][1]["error"] == f"refused {TUNING}"
    assert report["summary"] == {
        "documents": 4,
        "succeeded": 3,
        "failed": 1,
        "pending": 0,
        "chunks": 4,
        "unchanged": 0,
    }
    assert fake_portal.sources("docs") == [DATA, INTRO, NOTES]


@pytest.mark.parametrize("status", [404, 405])
def test_server_without_the_batch_route_still_ingests_everything(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    docs = make_docs(tmp_path)
    fake_portal.batch_missing = status

    code = main(ingest_argv(fake_portal, docs, "--token", "alice", "--batch-size", "2"))

    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == expected_run_output(docs)
    assert captured.err == BROKEN_NOTE.format(docs=docs)
    # Asked once; the second batch goes straight to the single-document route.
    assert fake_portal.ingests() == [
        (BATCH, [DATA, TUNING]),
        (SINGLE, [DATA]),
        (SINGLE, [TUNING]),
        (SINGLE, [INTRO]),
        (SINGLE, [NOTES]),
    ]
    assert fake_portal.sources("docs") == [DATA, TUNING, INTRO, NOTES]


class BatchTimesOut(httpx.BaseTransport):
    """Passes requests to the server, except batch requests, which time out before arriving."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.timed_out: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == BATCH:
            self.timed_out.append(request.url.path)
            raise httpx.ReadTimeout("timed out", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_batch_transport_error_falls_back_and_keeps_trying_batches(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_docs(tmp_path)
    transport = BatchTimesOut()
    console, stdout, stderr = make_console(transport=transport)

    code = run(ingest_argv(fake_portal, docs, "--token", "alice", "--batch-size", "2"), console)

    assert code == 0
    assert stdout.getvalue() == expected_run_output(docs)
    assert stderr.getvalue() == BROKEN_NOTE.format(docs=docs)
    # A timeout says nothing about the route, so the second batch is tried too.
    assert transport.timed_out == [BATCH, BATCH]
    assert fake_portal.ingests() == [(SINGLE, [source]) for source in (DATA, TUNING, INTRO, NOTES)]


def test_batches_are_split_by_utf8_json_bytes_and_big_documents_go_alone(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    texts = {
        "a.md": "a" * 500_000,
        "b.md": "b" * 500_000,  # a + b: about 1,000,100 bytes, under the 1 MiB budget
        "c.md": "é" * 300_000,  # 600,000 bytes in UTF-8: with d, over the budget in bytes
        "d.md": "é" * 250_000,  # (though 550,000 characters together would fit)
        "e.md": "e" * (MAX_BATCH_BYTES + 1),  # over the budget on its own
        "f.md": "Small file f.\n",
        "g.md": "Small file g.\n",
    }
    for name, text in texts.items():
        (docs / name).write_text(text)
    sizes = {
        name: encoded_size(document_fields(document(name, text), []))
        for name, text in texts.items()
    }
    assert sizes["a.md"] + sizes["b.md"] <= MAX_BATCH_BYTES < sizes["c.md"] + sizes["d.md"]

    code = main(ingest_argv(fake_portal, docs, "--token", "alice"))

    assert code == 0
    assert fake_portal.ingests() == [
        (BATCH, ["a.md", "b.md"]),
        (SINGLE, ["c.md"]),
        (SINGLE, ["d.md"]),
        (SINGLE, ["e.md"]),
        (BATCH, ["f.md", "g.md"]),
    ]
    assert capsys.readouterr().out == (
        "".join(f"ingested\t{docs}/{name}\t1 chunks\n" for name in texts)
        + "summary\tdocuments=7 succeeded=7 failed=0 chunks=7\n"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "must be greater than 0, got '0'"),
        ("-3", "must be greater than 0, got '-3'"),
        ("101", "must be at most 100, got '101'"),
        ("ten", "expected a number, got 'ten'"),
    ],
)
def test_batch_size_out_of_range_is_a_usage_error(tmp_path: Path, value: str, message: str) -> None:
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(
        ["ingest-dir", "--collection", "c", "--docs-path", str(tmp_path), "--batch-size", value],
        console,
    )

    assert code == 2
    assert stdout.getvalue() == ""
    assert stderr.getvalue().startswith("usage: ragctl ingest-dir ")
    assert stderr.getvalue().endswith(
        f"ragctl ingest-dir: error: argument --batch-size: {message}\n"
    )
