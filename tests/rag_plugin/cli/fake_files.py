"""The fake portal's file uploads: ``multipart/form-data`` read exactly as it was sent, and
``POST /api/rag/files``'s contract (413 from the declared length, 422 for a type the portal
does not read, told from the content as the portal tells it, one job per file).

A file job stores the file's bytes decoded as UTF-8 (with replacements) as its text, so its
chunks are its blank-line-separated paragraphs like any other fake document.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from rag_plugin.exceptions import RagError
from rag_plugin.files import detect_media_type

if TYPE_CHECKING:
    from tests.rag_plugin.cli.fake_portal import FakePortal

_NAME = re.compile(r'; name="([^"]*)"')
_FILENAME = re.compile(r'; filename="([^"]*)"')


@dataclass(frozen=True)
class Form:
    """A multipart body: its text fields (each name's values in order), its ``file`` parts as
    (filename, bytes), and the Content-Length it was sent with (None: none was)."""

    fields: dict[str, list[str]]
    files: list[tuple[str, bytes]]
    length: int | None

    def value(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None


def parse_form(content_type: str, body: bytes, length: int | None) -> Form:
    """Split ``body`` at its boundary; part bodies are kept byte for byte."""
    boundary = content_type.split("boundary=", 1)[1].strip('"')
    fields: dict[str, list[str]] = {}
    files: list[tuple[str, bytes]] = []
    # Each part sits between "--boundary\r\n" and "\r\n--boundary"; the last ends with "--".
    for part in body.split(b"--" + boundary.encode())[1:-1]:
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        data = data.removesuffix(b"\r\n")
        headers = head.decode("utf-8")
        name = _NAME.search(headers)
        filename = _FILENAME.search(headers)
        if name is None:
            continue
        if filename is not None:
            files.append((filename.group(1), data))
        else:
            fields.setdefault(name.group(1), []).append(data.decode("utf-8"))
    return Form(fields, files, length)


def upload(portal: FakePortal, form: Any, user: str) -> tuple[int, Any]:
    """``POST /api/rag/files``: every file of the upload becomes a job, or none does."""
    if not isinstance(form, Form):
        return 415, {"error": "Send multipart/form-data.", "code": "UNSUPPORTED_MEDIA_TYPE"}
    if form.length is None:
        error = "Send the upload's size in a Content-Length header."
        return 411, {"error": error, "code": "LENGTH_REQUIRED"}
    if form.length > portal.max_upload_bytes:
        error = (
            f"Request body is {form.length} bytes; the limit is {portal.max_upload_bytes} "
            "bytes (RAG_MAX_UPLOAD_BYTES)."
        )
        return 413, {"error": error, "code": "PAYLOAD_TOO_LARGE"}
    collection = form.value("collection")
    if not collection or not form.files:
        return 400, {"error": "Invalid input: collection and file", "code": "INVALID_INPUT"}
    accepted = []
    documents = []
    for filename, data in form.files:
        source = form.value("source") or filename
        if source in portal.refuse:
            status = portal.refuse[source]
            code = {403: "FORBIDDEN", 413: "PAYLOAD_TOO_LARGE"}.get(status, "INVALID_INPUT")
            return status, {"error": f"refused {source}", "code": code}
        try:
            media_type = detect_media_type(data, filename)
        except RagError as exc:
            return 422, {"error": str(exc), "code": exc.code}
        documents.append(
            {
                "content": data.decode("utf-8", "replace"),
                "title": PurePath(filename).stem,
                "source": source,
                "tags": form.fields.get("tags", []),
                "metadata": json.loads(form.value("metadata") or "{}"),
                "file": {
                    "media_type": media_type,
                    "pages": max([1, *portal.needs_ocr.get(source, [])]),
                    "needs_ocr_pages": portal.needs_ocr.get(source, []),
                },
            }
        )
        accepted.append((filename, media_type))
    body = {"collection": collection, "chunking_strategy": form.value("chunking_strategy")}
    jobs = []
    for (filename, media_type), document in zip(accepted, documents, strict=True):
        _, job = portal.queue.submit(user, {**body, "async": True}, [document], "file")
        jobs.append(
            {
                "filename": filename,
                "media_type": media_type,
                "job_id": job["job_id"],
                "status_url": job["status_url"],
                "state": job["state"],
            }
        )
    return 202, {"jobs": jobs}
