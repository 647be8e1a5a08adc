"""Uploads the worker reads: documents with pages, the original downloaded, replaced, re-indexed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from portal import launch
from rag_plugin.citations import page_label
from rag_plugin.files import extract
from tests.conftest import LOGS, PortalServer
from tests.portal.api.files_helpers import ACME, upload
from tests.portal.api.test_jobs import wait_for
from tests.rag_plugin.files.makers import (
    PAGE_5,
    REPORT_TITLE,
    report_docx,
    report_pdf,
    simple_pdf,
)

PDF_MEDIA_TYPE = "application/pdf"
FIXTURES = Path(__file__).parents[2] / "rag_plugin" / "files" / "fixtures"


@pytest.fixture(scope="module")
def worker(portal_server: PortalServer) -> Iterator[None]:
    """One worker for the module (its first file starts the parser's fork server)."""
    with launch.worker(portal_server.env, LOGS / "worker-test-files.log"):
        yield


def uploaded(api: httpx.Client, collection: str, name: str, data: bytes, **form: Any) -> Any:
    """Upload one file, wait for its job, return the ended job."""
    response = upload(api, collection, [(name, data)], **form)
    assert response.status_code == 202, response.text
    (accepted,) = response.json()["jobs"]
    return wait_for(api, accepted["job_id"], timeout=120)


def test_a_pdf_and_a_docx_become_documents_whose_chunks_carry_their_pages(
    portal_server: PortalServer, source: str, worker: None
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = upload(
            api,
            source,
            [("report.pdf", report_pdf()), ("census.docx", report_docx())],
            metadata='{"team": "rivers"}',
            tags="survey",
            chunking_strategy="semantic",
        )
        assert response.status_code == 202, response.text
        accepted = response.json()["jobs"]
        assert [(j["filename"], j["media_type"], j["state"]) for j in accepted] == [
            ("report.pdf", PDF_MEDIA_TYPE, "queued"),
            (
                "census.docx",
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                "queued",
            ),
        ]
        pdf_job, docx_job = (wait_for(api, j["job_id"], timeout=120) for j in accepted)
        assert pdf_job["state"] == "succeeded", pdf_job
        assert pdf_job["kind"] == "file"
        assert pdf_job["file"]["filename"] == "report.pdf"
        (result,) = pdf_job["results"]
        assert (result["source"], result["pages"], result["media_type"]) == (
            "report.pdf",
            5,
            PDF_MEDIA_TYPE,
        )
        assert result["needs_ocr_pages"] == []  # Tesseract read the scanned page 4
        assert docx_job["state"] == "succeeded", docx_job
        assert docx_job["results"][0]["pages"] == 2

        document = api.get(f"/api/rag/documents/{result['document_id']}").json()
        assert document["title"] == REPORT_TITLE
        assert document["tags"] == ["survey"]
        assert document["metadata"]["team"] == "rivers"
        assert document["metadata"]["page_count"] == 5
        assert document["metadata"]["media_type"] == PDF_MEDIA_TYPE
        chunks = document["chunks"]
        pages = [(c["metadata"]["page_number"], c["metadata"]["page_end"]) for c in chunks]
        assert pages == sorted(pages)
        assert pages[0][0] == 1
        assert pages[-1][1] == 5
        for chunk in chunks:
            if "Conclusion" in chunk["content"]:
                assert chunk["metadata"]["page_end"] == 5
            if "old mill" in chunk["content"]:  # OCR'd from the picture on page 4
                assert chunk["metadata"]["page_number"] <= 4 <= chunk["metadata"]["page_end"]
                assert chunk["metadata"]["has_image"] is True

        found = api.post(
            "/api/rag/search",
            json={"collection": source, "query": "stable otter numbers", "strategy": "bm25"},
        ).json()["results"]
        assert found[0]["metadata"]["document_id"] == result["document_id"]
        assert found[0]["metadata"]["page_end"] == 5
        assert PAGE_5[1] in found[0]["content"]


def test_the_original_is_downloaded_by_its_reader_only_and_deleted_with_its_document(
    portal_server: PortalServer, source: str, worker: None
) -> None:
    data = simple_pdf([["Kept as it was sent."], ["Page two of the original."]])
    with portal_server.api(ACME, "alice") as alice, portal_server.api(ACME, "bob") as bob:
        job = uploaded(alice, source, "kept.pdf", data, source="manuals/kept.pdf")
        assert job["state"] == "succeeded", job
        document_id = job["results"][0]["document_id"]
        assert job["results"][0]["source"] == "manuals/kept.pdf"

        response = alice.get(f"/api/rag/documents/{document_id}/file")
        assert response.status_code == 200
        assert response.content == data
        assert response.headers["content-type"] == PDF_MEDIA_TYPE
        assert response.headers["content-disposition"] == 'attachment; filename="kept.pdf"'

        assert bob.get(f"/api/rag/documents/{document_id}/file").status_code == 404

        assert alice.delete(f"/api/rag/documents/{document_id}").status_code == 200
        gone = alice.get(f"/api/rag/documents/{document_id}/file")
        assert (gone.status_code, gone.json()["code"]) == (404, "NOT_FOUND")


def test_a_document_ingested_as_text_has_no_file_to_download(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        ingested = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": "Plain text sent as JSON. " * 5},
        ).json()
        response = api.get(f"/api/rag/documents/{ingested['document_id']}/file")
    assert response.status_code == 404
    assert "not ingested from an uploaded file" in response.json()["error"]


def test_a_real_manual_is_read_page_by_page(
    portal_server: PortalServer, source: str, worker: None
) -> None:
    data = (FIXTURES / "fontconfig-user.pdf").read_bytes()
    with_text = {p.number for p in extract(data).pages if p.end > p.start}
    with portal_server.api(ACME, "alice") as api:
        job = uploaded(api, source, "manual.bin", data)  # the name says nothing of the type
        assert job["state"] == "succeeded", job
        (result,) = job["results"]
        assert result["media_type"] == PDF_MEDIA_TYPE
        assert result["pages"] >= len(with_text) > 1
        document = api.get(f"/api/rag/documents/{result['document_id']}").json()
        context = api.post(
            "/api/rag/context",
            json={"query": "font configuration file", "collections": [{"name": source}]},
        ).json()
    spans = [(c["metadata"]["page_number"], c["metadata"]["page_end"]) for c in document["chunks"]]
    assert spans == sorted(spans)
    covered = {page for first, last in spans for page in range(first, last + 1)}
    assert with_text <= covered  # every page with text is in some chunk, at its place

    # Each source is cited with its chunk's pages, in the numbered context as in its fields.
    pages_of = {
        c["id"]: (c["metadata"]["page_number"], c["metadata"]["page_end"])
        for c in document["chunks"]
    }
    assert context["sources"]
    for cited in context["sources"]:
        first, last = pages_of[cited["chunk_id"]]
        assert (cited["page_number"], cited["page_end"]) == (first, last)
        assert cited["citation"] == f"{document['title']}, {page_label(first, last)}"
        assert f"[Document {cited['footnote_id']}] {cited['citation']}\n" in context["context"]


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        (
            "secret.pdf",
            simple_pdf([["Top secret."]], owner_password="o", user_password="u"),
            "ENCRYPTED_DOCUMENT",
        ),
        ("broken.pdf", simple_pdf([["Cut short."]] * 3)[:600], "CORRUPT_DOCUMENT"),
    ],
    ids=["encrypted", "corrupt"],
)
def test_a_file_that_cannot_be_read_fails_its_job_with_a_code_and_writes_nothing(
    portal_server: PortalServer, source: str, worker: None, name: str, data: bytes, code: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        job = uploaded(api, source, name, data)
        assert job["state"] == "failed", job
        assert job["error"]["code"] == code
        assert job["attempts"] == 1  # the file's fault: never retried
        assert source not in {c["name"] for c in api.get("/api/rag/collections").json()}


def test_a_new_upload_of_a_source_replaces_its_document_and_original(
    portal_server: PortalServer, source: str, worker: None
) -> None:
    first = simple_pdf([["The first version of the guide."]])
    second = simple_pdf([["The second version of the guide, rewritten."]])
    with portal_server.api(ACME, "alice") as api:
        for data in (first, second):
            job = uploaded(api, source, "guide.pdf", data)
            assert job["state"] == "succeeded", job
        document_id = job["results"][0]["document_id"]
        assert api.get(f"/api/rag/documents/{document_id}/file").content == second
    with psycopg.connect(portal_server.database_url) as conn:
        kept = conn.execute(
            "SELECT count(*) FROM acme.tenants_storedfile WHERE collection = %s", (source,)
        ).fetchone()
    assert kept == (1,)  # the first original went with the version it belonged to


def test_a_document_is_reindexed_from_its_original(
    portal_server: PortalServer, source: str, worker: None
) -> None:
    data = simple_pdf([["Re-index me as words. " * 30], ["And the second page. " * 30]])
    with portal_server.api(ACME, "alice") as alice, portal_server.api(ACME, "bob") as bob:
        first = uploaded(alice, source, "again.pdf", data, tags="manual")
        assert first["state"] == "succeeded", first
        document_id = first["results"][0]["document_id"]
        before = alice.get(f"/api/rag/documents/{document_id}").json()

        # The same file read the same way: the run finds the document unchanged.
        same = alice.post(f"/api/rag/documents/{document_id}/reindex")
        assert same.status_code == 202, same.text
        assert (same.json()["kind"], same.json()["file"]["filename"]) == ("file", "again.pdf")
        unchanged = wait_for(alice, same.json()["id"], timeout=120)
        assert unchanged["state"] == "succeeded", unchanged
        assert unchanged["results"][0]["unchanged"] is True

        # Chunked another way: the document is replaced, its tags and original kept.
        other = alice.post(
            f"/api/rag/documents/{document_id}/reindex", json={"chunking_strategy": "character"}
        )
        assert other.status_code == 202, other.text
        done = wait_for(alice, other.json()["id"], timeout=120)
        assert done["state"] == "succeeded", done
        assert done["results"][0]["unchanged"] is False
        after = alice.get(f"/api/rag/documents/{done['results'][0]['document_id']}").json()
        assert after["metadata"]["chunking"] != before["metadata"]["chunking"]
        assert after["tags"] == ["manual"]
        assert {c["metadata"]["page_number"] for c in after["chunks"]} == {1, 2}
        assert alice.get(f"/api/rag/documents/{after['id']}/file").content == data

        # Only its reader re-indexes it; bad options are named.
        assert bob.post(f"/api/rag/documents/{after['id']}/reindex").status_code == 404
        bad = alice.post(
            f"/api/rag/documents/{after['id']}/reindex", json={"chunking_strategy": "pages"}
        )
        assert (bad.status_code, bad.json()["code"]) == (400, "INVALID_INPUT")
        assert "Unknown chunking strategy: pages" in bad.json()["error"]
        listed = alice.post(f"/api/rag/documents/{after['id']}/reindex", json=[])
        assert listed.status_code == 400


def test_a_document_ingested_as_text_cannot_be_reindexed(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        ingested = api.post(
            "/api/rag/ingest", json={"collection": source, "content": "Sent as text. " * 10}
        ).json()
        response = api.post(f"/api/rag/documents/{ingested['document_id']}/reindex")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")
    assert "not ingested from an uploaded file" in response.json()["error"]
