"""Uploads refused before anything is kept: file type, form fields, disabled source, size, count."""

from __future__ import annotations

import socket
import time

import pytest

from tests.conftest import PortalServer
from tests.portal.api.files_helpers import ACME, upload
from tests.rag_plugin.files.makers import simple_pdf


def test_an_unsupported_type_is_refused_at_upload_naming_the_file_and_the_types(
    portal_server: PortalServer, source: str
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    with portal_server.api(ACME, "alice") as api:
        before = api.get("/api/rag/jobs", params={"collection": source}).json()
        response = upload(api, source, [("ok.pdf", simple_pdf([["Fine."]])), ("photo.png", png)])
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["code"] == "UNSUPPORTED_FILE_TYPE"
        assert "photo.png" in body["error"]
        assert "PDF, DOCX, HTML" in body["error"]
        # The upload is all or nothing: the good file is not kept either.
        assert api.get("/api/rag/jobs", params={"collection": source}).json() == before


@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"metadata": '{"page_number": 3}'}, "metadata", "set from the file"),
        ({"metadata": '{"author": "me"}'}, "metadata", "set from the file"),
        ({"metadata": "not json"}, "metadata", "Not JSON"),
        ({"shared": "yes"}, "shared", "true or false"),
        ({"colour": "red"}, "colour", "Unknown form field"),
    ],
)
def test_bad_form_fields_are_a_400_naming_them(
    portal_server: PortalServer, source: str, form: dict[str, str], field: str, message: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = upload(api, source, [("a.pdf", simple_pdf([["A."]]))], **form)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
    assert field in response.json()["error"]
    assert message in response.json()["error"]


def test_an_upload_with_no_file_or_two_sources_is_a_400(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        empty = api.post("/api/rag/files", data={"collection": source}, files={})
        pdf = simple_pdf([["A."]])
        two = upload(api, source, [("a.pdf", pdf), ("b.pdf", pdf)], source="one-name.pdf")
    assert empty.status_code in (400, 415)
    assert two.status_code == 400
    assert "only when uploading one file" in two.json()["error"]


def test_a_disabled_source_refuses_the_upload_before_anything_is_kept(
    portal_server: PortalServer, source: str
) -> None:
    portal_server.set_source("acme", source, False)
    with portal_server.api(ACME, "alice") as api:
        response = upload(api, source, [("a.pdf", simple_pdf([["A."]]))])
        assert response.status_code == 403
        assert response.json()["code"] == "FORBIDDEN"
        assert api.get("/api/rag/jobs", params={"collection": source}).json()["jobs"] == []


def _raw_request(server: PortalServer, head: str) -> tuple[str, float]:
    """Send only a request's head (no body) and return the status line and how long the
    answer took."""
    token = server.token(ACME, "alice")
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(
            (head.format(host=f"{ACME}:{server.port}", token=token) + "\r\n").encode("ascii")
        )
        answer = conn.recv(4096).decode("latin-1")
    return answer.split("\r\n", 1)[0], time.monotonic() - started


def test_an_oversized_upload_is_refused_from_its_length_before_its_body_is_read(
    portal_server: PortalServer,
) -> None:
    status, took = _raw_request(
        portal_server,
        "POST /api/rag/files HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {60 * 1024 * 1024}\r\nConnection: close\r\n",
    )
    assert status.endswith("413 Request Entity Too Large"), status
    assert took < 5  # the 60 MiB it announced were never sent, nor waited for


def test_an_upload_without_a_length_is_refused(portal_server: PortalServer) -> None:
    status, _ = _raw_request(
        portal_server,
        "POST /api/rag/files HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n",
    )
    assert status.endswith("411 Length Required"), status


def test_more_files_than_an_upload_may_carry_are_refused_and_none_is_kept(
    portal_server: PortalServer, source: str
) -> None:
    pdf = simple_pdf([["One of many."]])
    many = [(f"f{i}.pdf", pdf) for i in range(21)]  # RAG_MAX_UPLOAD_FILES is 20
    with portal_server.api(ACME, "alice") as api:
        response = upload(api, source, many)
        assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")
        assert response.json()["error"] == (
            "file: 21 files; the limit is 20 per upload (RAG_MAX_UPLOAD_FILES)."
        )
        assert api.get("/api/rag/jobs", params={"collection": source}).json()["total"] == 0
