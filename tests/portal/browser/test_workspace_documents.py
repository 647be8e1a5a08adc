"""Workspace lists in Chromium: pages of documents, a shared collection, bad input (SPEC U1)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from tests.conftest import PortalServer
from tests.portal.browser.workspace_helpers import ACME, SICK_DAYS, csrf_token, fetch, login

pytestmark = pytest.mark.browser


UPLOAD = """async ({token, collection}) => {
  const body = new FormData();
  body.append("csrfmiddlewaretoken", token);
  body.append("upload-collection", collection);
  body.append("upload-file", new Blob([new Uint8Array([0, 159, 146, 150, 7, 0, 1])]), "x.bin");
  const response = await fetch("/upload/", {method: "POST", body});
  return [response.status, await response.text()];
}"""


def test_lists_page_and_bad_input_gets_a_clear_message(
    page: Any, portal_server: PortalServer, alices: dict[str, str]
) -> None:
    source = portal_server.new_source()
    documents = [
        {"content": f"Meeting notes number {i}. " * 5, "title": f"Notes {i:02}", "source": f"n{i}"}
        for i in range(23)
    ]
    with portal_server.api(ACME, "alice") as api:
        batch = api.post(
            "/api/rag/ingest/batch", json={"collection": source, "documents": documents}
        )
    with portal_server.api(ACME, "admin") as api:  # a shared collection, which users only read
        shared = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": SICK_DAYS * 3, "title": "Rules", "shared": True},
        )
    assert (batch.status_code, shared.status_code) == (200, 200), shared.text
    login(page, portal_server, "alice")

    # Newest first, 20 a page; the filter matches titles and sources.
    page.goto(f"{portal_server.url_for(ACME)}/collections/{source}/?page=2")
    titles = page.locator("#documents tbody th").all_inner_texts()
    assert titles == ["Notes 02", "Notes 01", "Notes 00"]
    page.get_by_role("link", name="← Newer").click()
    # click() returns once the navigation commits, before the new page's table is there.
    page.wait_for_selector("#documents .pager span:text-is('Page 1')")
    assert page.locator("#documents tbody tr").count() == 20
    status, text = fetch(page, f"/collections/{source}/documents?q=NOTES 1")
    assert status == 200
    assert re.findall(r"Notes \d\d", text) == [f"Notes {i}" for i in range(19, 9, -1)]

    token = csrf_token(page)
    status, text = fetch(
        page,
        f"/collections/{source}/paste",
        method="POST",
        form={"csrfmiddlewaretoken": token, "paste-content": "Hi."},
    )
    assert (status, "too small to chunk" in html.unescape(text)) == (400, True), text
    status, text = page.evaluate(UPLOAD, {"token": token, "collection": source})
    refusal = "Nothing was uploaded: The file 'x.bin' is neither a document nor UTF-8 text"
    assert (status, refusal in html.unescape(text)) == (400, True), text
    for query, message in (
        (f"q=notes&c=mine:{source}&key=topic", "Give both a metadata key and its value"),
        ("q=notes", "Choose at least one collection to search."),
        (f"q=notes&c=mine:{source}&limit=0", "Ensure this value is greater than or equal to 1"),
    ):
        status, text = fetch(page, f"/search/?{query}")
        assert (status, message in text) == (400, True), query

    # The shared collection: listed, readable, with no form that changes it.
    page.goto(f"{portal_server.url_for(ACME)}/")
    page.locator("#shared-collections a", has_text=source).click()
    page.wait_for_selector("#documents >> text=Rules")
    assert page.locator("main form[method=post]").count() == 0
    page.locator("#documents a", has_text="Rules").click()
    page.wait_for_selector("#document-chunks")
    assert page.get_by_role("button", name="Delete the document").count() == 0
