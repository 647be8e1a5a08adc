"""ragctl ingest-dir uploads PDF, DOCX and HTML files to the real portal (gunicorn +
PostgreSQL), whose worker parses them, next to the text it sends as JSON.

The files are made by real tools (fpdf2, python-docx) in tests/rag_plugin/files/makers.py.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from portal import launch
from rag_plugin.cli import run
from rag_plugin.cli.console import Console
from tests.conftest import LOGS, PortalServer
from tests.rag_plugin.cli.ingest_dir_helpers import UNSUPPORTED
from tests.rag_plugin.cli.test_cli_portal import (
    ACME,
    ingest_argv,
    login,
    run_recording,
    stored_documents,
)
from tests.rag_plugin.files.makers import (
    ARTICLE_HTML,
    chart_image,
    png,
    report_docx,
    simple_pdf,
)

GUIDE = "# Field guide\n\nUpload the survey manuals to the portal before the spring count.\n"
BEAVERS = [
    ["Beavers build dams across small streams in winter."],
    ["Their lodges open under water."],
]
FILE_SOURCES = ["manuals/census.docx", "manuals/otters.pdf", "site.html"]


@pytest.fixture(scope="module", autouse=True)
def worker(portal_server: PortalServer) -> Iterator[None]:
    """The ingestion worker that parses the uploaded files."""
    with launch.worker(portal_server.env, LOGS / "worker-test-cli-portal-files.log"):
        yield


@pytest.fixture
def source(portal_server: PortalServer) -> str:
    """A collection name allowlisted for this test only."""
    return portal_server.new_source()


def make_folder(root: Path) -> Path:
    """Markdown, a PDF, a DOCX, an HTML page, an encrypted PDF and a PNG."""
    docs = root / "docs"
    (docs / "manuals").mkdir(parents=True)
    (docs / "guide.md").write_text(GUIDE)
    (docs / "manuals" / "otters.pdf").write_bytes(simple_pdf(BEAVERS))
    (docs / "manuals" / "census.docx").write_bytes(report_docx())
    (docs / "site.html").write_bytes(ARTICLE_HTML)
    secret = simple_pdf([["Top secret."]], owner_password="o", user_password="u")
    (docs / "secret.pdf").write_bytes(secret)
    (docs / "photo.png").write_bytes(png(chart_image()).getvalue())
    return docs


def top_source(server: PortalServer, collection: str, query: str) -> str:
    """The source of the best BM25 hit for ``query``."""
    with server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/search", json={"collection": collection, "query": query, "strategy": "bm25"}
        )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    assert results, query
    source: str = results[0]["metadata"]["source"]
    return source


def test_text_pdf_docx_and_html_are_ingested_and_a_rerun_finds_them_unchanged(
    tmp_path: Path,
    portal_server: PortalServer,
    source: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = make_folder(tmp_path)
    argv = ingest_argv(portal_server, source, docs, *login(portal_server))

    code, paths = run_recording(argv)

    captured = capsys.readouterr()
    assert code == 1
    # The text alone goes to /api/rag/ingest (a batch of one), each file in its own upload.
    assert paths[:6] == ["/api/auth/login", "/api/rag/ingest"] + ["/api/rag/files"] * 4
    out = captured.out.splitlines()
    assert out[0] == f"ingested\t{docs}/guide.md\t1 chunks"
    for line, name in zip(out[1:4], FILE_SOURCES, strict=True):
        assert re.fullmatch(rf"ingested\t{re.escape(f'{docs}/{name}')}\t[1-9][0-9]* chunks", line)
    assert re.fullmatch(r"summary\tdocuments=5 succeeded=4 failed=1 chunks=[0-9]+", out[4])
    assert len(out) == 5
    err = captured.err.splitlines()
    assert err[0] == f"skipped\t{docs}/photo.png\t{UNSUPPORTED}"
    secret = re.escape(f"{docs}/secret.pdf")
    assert re.fullmatch(
        rf"failed\t{secret}\tENCRYPTED_DOCUMENT: .+ \(job [0-9a-f-]{{36}}\)", err[1]
    )
    assert err[2:] == ["error: 1 document(s) failed ingestion"]

    assert [document["source"] for document in stored_documents(portal_server, source)] == [
        "guide.md",
        *FILE_SOURCES,
    ]
    assert top_source(portal_server, source, "survey manuals spring count") == "guide.md"
    assert top_source(portal_server, source, "beavers dams lodges") == "manuals/otters.pdf"
    assert top_source(portal_server, source, "volunteers walked") == "manuals/census.docx"
    assert top_source(portal_server, source, "pesticides restoration") == "site.html"

    code = run([*argv, "--json"], Console(sys.stdout, sys.stderr))

    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1
    outcomes = {item["source"]: item for item in report["documents"]}
    assert {name: item["status"] for name, item in outcomes.items()} == {
        "guide.md": "ingested",
        "manuals/census.docx": "ingested",
        "manuals/otters.pdf": "ingested",
        "secret.pdf": "failed",
        "site.html": "ingested",
    }
    assert all(item["unchanged"] for item in outcomes.values() if item["status"] == "ingested")
    assert report["summary"]["unchanged"] == report["summary"]["succeeded"] == 4
    pdf = outcomes["manuals/otters.pdf"]
    assert (pdf["media_type"], pdf["pages"], pdf["needs_ocr_pages"]) == ("application/pdf", 2, [])
    assert outcomes["site.html"]["media_type"] == "text/html"
    assert outcomes["secret.pdf"]["code"] == "ENCRYPTED_DOCUMENT"
    assert report["skipped"] == [{"path": f"{docs}/photo.png", "reason": UNSUPPORTED}]
    assert captured.err == (
        f"skipped\t{docs}/photo.png\t{UNSUPPORTED}\nerror: 1 document(s) failed ingestion\n"
    )
