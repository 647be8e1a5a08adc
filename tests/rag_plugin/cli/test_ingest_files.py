"""ragctl ingest-dir uploads PDF, DOCX and HTML files to /api/rag/files, one request each, and
waits for their jobs with the text documents' (issue 32, items 3 and 4)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli import run
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    UNSUPPORTED,
    Intercepting,
    ingest,
    ingest_argv,
    make_console,
)

PDF, HTML = "application/pdf", "text/html"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
FILES = "/api/rag/files"


def tiny_docx() -> bytes:
    """A ZIP archive with a Word document's main part: a DOCX as far as its type goes (the
    same bytes on every call: the part's time is fixed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        part = zipfile.ZipInfo("word/document.xml", date_time=(2024, 1, 1, 0, 0, 0))
        archive.writestr(part, "<w:document/>")
    return buffer.getvalue()


def make_file_docs(root: Path) -> Path:
    """Two text files, five uploads (one a PDF only by its content), an empty PDF, a PNG."""
    docs = root / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "site").mkdir()
    (docs / "guide.md").write_text("# Guide\n\nRead the manual.\n")
    (docs / "notes" / "todo.txt").write_text("Write the tests.\n")
    (docs / "manual.PDF").write_bytes(b"%PDF-1.7\n% a manual\n")
    (docs / "notes" / "report.docx").write_bytes(tiny_docx())
    (docs / "scan.bin").write_bytes(b"%PDF-1.4\n% scanned\n")
    (docs / "site" / "index.html").write_text("<!DOCTYPE html><p>Welcome.</p>\n")
    (docs / "site" / "old.htm").write_text("<html><body>Old page.</body></html>\n")
    (docs / "empty.pdf").write_bytes(b"")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    return docs


SKIPPED = (
    f"skipped\t{{docs}}/empty.pdf\tempty (0 bytes)\nskipped\t{{docs}}/photo.png\t{UNSUPPORTED}\n"
)
"""What make_file_docs' folder prints on stderr first."""
UPLOADS = ["manual.PDF", "notes/report.docx", "scan.bin", "site/index.html", "site/old.htm"]


def test_a_folder_of_text_and_files_is_ingested_in_path_order(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)
    options = ("--tag", "manual", "--chunking-strategy", "semantic", "--metadata", "team=search")

    code, out, err = ingest(fake_portal, docs, *options)

    assert code == 0
    assert out == (
        f"ingested\t{docs}/guide.md\t2 chunks\n"
        f"ingested\t{docs}/manual.PDF\t1 chunks\n"
        f"ingested\t{docs}/notes/report.docx\t1 chunks\n"
        f"ingested\t{docs}/notes/todo.txt\t1 chunks\n"
        f"ingested\t{docs}/scan.bin\t1 chunks\n"
        f"ingested\t{docs}/site/index.html\t1 chunks\n"
        f"ingested\t{docs}/site/old.htm\t1 chunks\n"
        "summary\tdocuments=7 succeeded=7 failed=0 chunks=8\n"
    )
    assert err == SKIPPED.format(docs=docs)
    # The text goes as today, in one batch; then one upload per file, each its own job.
    assert fake_portal.ingests() == [
        ("/api/rag/ingest/batch", ["guide.md", "notes/todo.txt"]),
        *[(FILES, [source]) for source in UPLOADS],
    ]
    assert [job.kind for job in fake_portal.queue.jobs] == ["batch"] + ["file"] * 5
    assert sorted(set(fake_portal.polls())) == [job_id(number) for number in range(1, 7)]
    docx = fake_portal.requests[2].body
    assert docx.fields == {
        "collection": ["docs"],
        "source": ["notes/report.docx"],
        "tags": ["manual"],
        "chunking_strategy": ["semantic"],
        "metadata": ['{"team": "search"}'],
    }
    assert docx.files == [("report.docx", tiny_docx())]
    assert docx.length is not None
    assert fake_portal.sources("docs") == sorted(["guide.md", "notes/todo.txt", *UPLOADS])


def test_json_gives_each_file_its_type_pages_and_job(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)

    code, out, _ = ingest(fake_portal, docs, "--json")

    report = json.loads(out)
    assert code == 0
    by_source = {item["source"]: item for item in report["documents"]}
    assert by_source["scan.bin"] == {
        "path": f"{docs}/scan.bin",
        "source": "scan.bin",
        "media_type": PDF,
        "bytes": 19,
        "status": "ingested",
        "chunks": 1,
        "document_id": "doc5",
        "job_id": job_id(4),
        "unchanged": False,
        "pages": 1,
        "needs_ocr_pages": [],
    }
    assert by_source["notes/report.docx"]["media_type"] == DOCX
    assert by_source["guide.md"]["title"] == "Guide"
    assert report["skipped"] == [
        {"path": f"{docs}/empty.pdf", "reason": "empty (0 bytes)"},
        {"path": f"{docs}/photo.png", "reason": UNSUPPORTED},
    ]
    assert report["empty"] == [f"{docs}/empty.pdf"]
    assert report["summary"]["documents"] == 7


def test_pages_that_need_ocr_are_named_on_the_files_line_and_in_json(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)
    fake_portal.needs_ocr["scan.bin"] = [1, 3]

    code, out, _ = ingest(fake_portal, docs)
    _, json_out, _ = ingest(fake_portal, docs, "--json")

    assert code == 0
    assert (
        f"ingested\t{docs}/scan.bin\t1 chunks\tpages 1, 3 need OCR: they are images and their "
        "text was not read\n"
    ) in out
    scan = next(item for item in json.loads(json_out)["documents"] if item["source"] == "scan.bin")
    assert (scan["pages"], scan["needs_ocr_pages"]) == (3, [1, 3])


def test_a_pdf_that_is_not_one_is_uploaded_and_the_servers_422_reported(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "real.html").write_text("<html>Fine.</html>\n")
    (docs / "fake.pdf").write_bytes(b"\x00\x01 neither a document nor text")

    code, out, err = ingest(fake_portal, docs)
    _, json_out, _ = ingest(fake_portal, docs, "--json")

    assert code == 1
    assert out == (
        f"ingested\t{docs}/real.html\t1 chunks\n"
        "summary\tdocuments=2 succeeded=1 failed=1 chunks=1\n"
    )
    assert err == (
        f"failed\t{docs}/fake.pdf\tHTTP 422: The file 'fake.pdf' is neither a document nor UTF-8 "
        "text, not a type that can be read; upload one of: PDF, DOCX, HTML, Markdown, plain "
        "text, JSON, JSON Lines.\n"
        "error: 1 document(s) failed ingestion\n"
    )
    refused = json.loads(json_out)["documents"][0]
    assert (refused["status"], refused["http_status"], refused["code"]) == (
        "failed",
        422,
        "UNSUPPORTED_FILE_TYPE",
    )


@pytest.mark.parametrize(
    ("status", "code"), [(403, "FORBIDDEN"), (400, "INVALID_INPUT"), (413, "PAYLOAD_TOO_LARGE")]
)
def test_a_refused_upload_fails_that_file_only_with_the_servers_code(
    tmp_path: Path, fake_portal: FakePortal, status: int, code: str
) -> None:
    docs = make_file_docs(tmp_path)
    fake_portal.refuse["site/index.html"] = status

    exit_code, out, _ = ingest(fake_portal, docs, "--json")

    report = json.loads(out)
    assert exit_code == 1
    failed = [item for item in report["documents"] if item["status"] == "failed"]
    assert [
        (item["source"], item["http_status"], item["code"], item["error"]) for item in failed
    ] == [("site/index.html", status, code, "refused site/index.html")]
    assert report["summary"]["succeeded"] == 6
    assert "site/index.html" not in fake_portal.sources("docs")


def test_an_upload_over_the_portals_limit_is_refused_by_its_length(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.pdf").write_bytes(b"%PDF-1.7\n" + b"x" * 600)
    fake_portal.max_upload_bytes = 500  # lower than ragctl's --max-upload-bytes

    code, out, err = ingest(fake_portal, docs)

    assert (code, out) == (1, "summary\tdocuments=1 succeeded=0 failed=1 chunks=0\n")
    length = fake_portal.requests[-1].body.length
    assert err == (
        f"failed\t{docs}/big.pdf\tHTTP 413: Request body is {length} bytes; the limit is 500 "
        "bytes (RAG_MAX_UPLOAD_BYTES).\nerror: 1 document(s) failed ingestion\n"
    )


def test_a_file_over_max_upload_bytes_is_skipped_without_a_request(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)

    code, out, err = ingest(fake_portal, docs, "--max-upload-bytes", "25")

    assert code == 0
    assert fake_portal.ingests()[1:] == [(FILES, ["manual.PDF"]), (FILES, ["scan.bin"])]
    too_big = (
        "over the upload limit of 25 bytes (the portal's RAG_MAX_UPLOAD_BYTES; "
        "--max-upload-bytes if the portal's is higher)"
    )
    assert err.splitlines() == [
        f"skipped\t{docs}/empty.pdf\tempty (0 bytes)",
        f"skipped\t{docs}/notes/report.docx\t{len(tiny_docx())} bytes, {too_big}",
        f"skipped\t{docs}/photo.png\t{UNSUPPORTED}",
        f"skipped\t{docs}/site/index.html\t31 bytes, {too_big}",
        f"skipped\t{docs}/site/old.htm\t36 bytes, {too_big}",
    ]
    assert out.endswith("summary\tdocuments=4 succeeded=4 failed=0 chunks=5\n")


def test_a_file_whose_job_fails_is_reported_with_the_jobs_code_and_id(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)
    fake_portal.queue.errors["manual.PDF"] = (
        "ENCRYPTED_DOCUMENT",
        "The file 'manual.PDF' is encrypted; upload it without a password.",
    )

    code, out, err = ingest(fake_portal, docs)

    assert code == 1
    assert out.endswith("summary\tdocuments=7 succeeded=6 failed=1 chunks=7\n")
    assert err == SKIPPED.format(docs=docs) + (
        f"failed\t{docs}/manual.PDF\tENCRYPTED_DOCUMENT: The file 'manual.PDF' is encrypted; "
        f"upload it without a password. (job {job_id(2)})\n"
        "error: 1 document(s) failed ingestion\n"
    )


def test_dry_run_lists_the_uploads_with_their_types(tmp_path: Path) -> None:
    docs = make_file_docs(tmp_path)
    console, stdout, stderr = make_console()

    assert (
        run(["ingest-dir", "--collection", "c", "--docs-path", str(docs), "--dry-run"], console)
        == 0
    )

    assert stdout.getvalue() == (
        f"{docs}/guide.md\tGuide\t26 bytes\n"
        f"{docs}/manual.PDF\t(PDF upload)\t20 bytes\n"
        f"{docs}/notes/report.docx\t(DOCX upload)\t{len(tiny_docx())} bytes\n"
        f"{docs}/notes/todo.txt\ttodo\t17 bytes\n"
        f"{docs}/scan.bin\t(PDF upload)\t19 bytes\n"
        f"{docs}/site/index.html\t(HTML upload)\t31 bytes\n"
        f"{docs}/site/old.htm\t(HTML upload)\t36 bytes\n"
        "dry_run=true documents=7\n"
    )
    assert stderr.getvalue() == SKIPPED.format(docs=docs)


def test_no_wait_prints_each_files_job(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = make_file_docs(tmp_path)

    code, out, _ = ingest(fake_portal, docs, "--no-wait")

    assert code == 0
    assert out == (
        f"job\t{job_id(1)}\t2 documents\n"
        + "".join(f"job\t{job_id(number)}\t1 documents\n" for number in range(2, 7))
        + "summary\tdocuments=7 succeeded=0 failed=0 chunks=0 pending=7\n"
    )


def test_ctrl_c_during_an_upload_names_the_jobs_already_submitted(
    tmp_path: Path, fake_portal: FakePortal
) -> None:
    docs = make_file_docs(tmp_path)

    def interrupt(request: httpx.Request) -> httpx.Response | None:
        if request.url.path == FILES and b'filename="report.docx"' in request.read():
            raise KeyboardInterrupt
        return None

    console, stdout, stderr = make_console(transport=Intercepting(interrupt))

    code = run(ingest_argv(fake_portal, docs, "--token", "alice"), console)

    assert (code, stdout.getvalue()) == (130, "")
    assert stderr.getvalue() == SKIPPED.format(docs=docs) + (
        f"these jobs go on in the portal (`ragctl jobs` shows them): {job_id(1)}, {job_id(2)}\n"
        "error: interrupted\n"
    )
