"""ragctl's HTTP client uploads a file to /api/rag/files as multipart, with its options."""

from __future__ import annotations

import httpx

from rag_plugin.cli.client import RagClient
from rag_plugin.cli.job import Submitted
from tests.rag_plugin.cli.fake_files import parse_form


def test_a_file_is_uploaded_as_multipart_with_a_length_its_source_and_options() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        accepted = {"filename": "r.pdf", "media_type": "application/pdf", "job_id": "j1",
                    "status_url": "/api/rag/jobs/j1", "state": "queued"}  # fmt: skip
        return httpx.Response(202, json={"jobs": [accepted]})

    data = b"%PDF-1.7\n\x00\xff binary \r\n--not a boundary\r\n"
    with RagClient("http://portal.test", transport=httpx.MockTransport(answer)) as client:
        submitted = client.upload_file(
            collection="docs",
            filename="r.pdf",
            data=data,
            source="reports/r.pdf",
            tags=["q1", "finance"],
            chunking_strategy="semantic",
            metadata={"team": "search", "year": 2024, "name": "Zoë"},
        )

    assert submitted == Submitted("j1", "queued", None, "application/pdf")
    (request,) = seen
    assert (request.method, request.url.path) == ("POST", "/api/rag/files")
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert int(request.headers["Content-Length"]) == len(request.content)
    form = parse_form(request.headers["Content-Type"], request.content, len(request.content))
    assert form.fields == {
        "collection": ["docs"],
        "source": ["reports/r.pdf"],
        "tags": ["q1", "finance"],
        "chunking_strategy": ["semantic"],
        "metadata": ['{"team": "search", "year": 2024, "name": "Zoë"}'],
    }
    assert form.files == [("r.pdf", data)]


def test_without_options_only_the_collection_source_and_file_are_sent() -> None:
    forms = []

    def answer(request: httpx.Request) -> httpx.Response:
        forms.append(parse_form(request.headers["Content-Type"], request.content, None))
        accepted = {"job_id": "j1", "state": "queued", "media_type": "text/html"}
        return httpx.Response(202, json={"jobs": [accepted]})

    with RagClient("http://portal.test", transport=httpx.MockTransport(answer)) as client:
        client.upload_file(
            collection="docs",
            filename="a.html",
            data=b"<p>A</p>",
            source="a.html",
            tags=[],
            chunking_strategy=None,
        )

    assert forms[0].fields == {"collection": ["docs"], "source": ["a.html"]}
    assert forms[0].files == [("a.html", b"<p>A</p>")]
