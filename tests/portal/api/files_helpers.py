"""Uploads to ``/api/rag/files`` for the file tests (test_files_*.py, SPEC F1-F3).

The portal is the session's live gunicorn server; the files are made by real tools (fpdf2,
python-docx) in tests/rag_plugin/files/makers.py, plus a real manual shipped as a fixture.
"""

from __future__ import annotations

from typing import Any

import httpx

ACME = "acme.localhost"


def upload(
    api: httpx.Client,
    collection: str,
    files: list[tuple[str, bytes]],
    **form: Any,
) -> httpx.Response:
    return api.post(
        "/api/rag/files",
        data={"collection": collection, **form},
        files=[("file", (name, data)) for name, data in files],
    )
