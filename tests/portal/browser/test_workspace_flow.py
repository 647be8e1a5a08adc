"""A user's whole workspace flow in Chromium, with a worker and a fake LLM, or none (SPEC U1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.portal.browser.workspace_helpers import ACME, NOT_ALLOWED, SICK_DAYS, login, shoot
from tests.rag_plugin.files.makers import simple_pdf
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.browser

HOLIDAYS = "Holiday requests go to the team lead. "


def test_a_user_creates_a_collection_uploads_a_pdf_searches_chats_and_logs_out(
    page: Any, portal_server: PortalServer, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    base = portal_server.url_for(ACME)
    pdf = tmp_path / "handbook.pdf"
    pdf.write_bytes(simple_pdf([[HOLIDAYS * 60], [SICK_DAYS]]))
    login(page, portal_server, "alice", shot="login")
    shoot(page, "collections")

    # A name the allowlist lacks: refused, saying so and whom to ask.
    page.get_by_label("Name", exact=True).fill("not_allowlisted")
    page.get_by_role("button", name="Create").click()
    error = page.inner_text("#create-collection .error-text")
    assert NOT_ALLOWED in error
    assert f"Ask admin <admin@{ACME}>" in error

    source = portal_server.new_source()
    page.get_by_label("Name", exact=True).fill(source)
    page.get_by_role("button", name="Create").click()
    page.wait_for_selector(f"h1:has-text('{source}')")
    assert "0 documents, 0 chunks" in page.inner_text("#collection-counts")

    with launch.worker(portal_server.env, LOGS / "worker-test-workspace.log"):
        page.get_by_label("Files", exact=True).set_input_files(str(pdf))
        page.get_by_role("button", name="Upload").click()
        page.wait_for_selector("#jobs .job")
        # The jobs panel follows the job by itself (no reload) until it has succeeded, then
        # the document list shows the new document.
        page.wait_for_selector("#jobs .job-succeeded", timeout=120_000)
        page.wait_for_selector("#documents >> text=handbook.pdf")
        assert page.inner_text("#collection-counts").startswith("1 document, ")
        assert page.url.endswith(f"/collections/{source}/")

        page.get_by_label("Title (optional)", exact=True).fill("Parking")
        page.get_by_label("Text", exact=True).fill(
            "Visitors park behind the warehouse on weekdays. " * 4
        )
        page.get_by_role("button", name="Add the text").click()
        page.wait_for_selector("#jobs .job-succeeded >> nth=1", timeout=60_000)
        page.wait_for_selector("#documents >> text=Parking")
        page.get_by_label("Find by title or source", exact=True).fill("handb")
        page.wait_for_function(
            "!document.querySelector('#documents').innerText.includes('Parking')"
        )
        shoot(page, "collection")

        page.locator("#documents tr", has_text="handbook.pdf").locator("th a").click()
        page.wait_for_selector("#document-chunks")
        assert "handbook.pdf" in page.inner_text("#document-file")
        assert "p. 1" in page.inner_text("#chunk-0")
        assert page.locator("#document-chunks li").last.locator(".page").inner_text().endswith("2")
        shoot(page, "document")
        document_url = page.url

        # Search: the hit's exact passage, highlighted in its text, with its page.
        page.click("nav a:text-is('Search')")
        page.get_by_label("Search for", exact=True).fill("sick dayz logged")
        for box in page.locator("input[name=c]").all():
            box.set_checked(box.get_attribute("value") == f"mine:{source}")
        page.locator("summary", has_text="Options").click()
        page.get_by_label("Correct typos", exact=True).check()
        page.get_by_label("Strategy", exact=True).select_option("bm25")
        page.get_by_role("button", name="Search", exact=True).click()
        page.wait_for_selector("#results")
        assert "dayz →" in page.inner_text(".corrections")
        hit = page.locator(".hit").first
        assert SICK_DAYS in hit.locator("mark").inner_text()
        assert hit.locator(".open-hit").inner_text().endswith("2")  # p. 2 or pp. 1–2
        shoot(page, "search")
        hit.locator(".open-hit").click()
        page.wait_for_selector("#passage-view")
        assert page.inner_text("#passage-page").endswith("2")
        assert SICK_DAYS in page.inner_text("#passage")
        assert page.evaluate("document.activeElement.id") == "passage"
        shoot(page, "passage")

        # Chat: the answer arrives in pieces, and its footnote opens the passage at its page.
        fake_llm.queued[:] = ["They are logged in the staff portal [1]."]
        fake_llm.delay = 0.15
        try:
            page.click("nav a:text-is('Chat')")
            for box in page.locator("#chat-form input[name=c]").all():
                box.set_checked(box.get_attribute("value") == f"mine:{source}")
            page.get_by_label("Your question", exact=True).fill("Where are sick days logged?")
            page.get_by_label("Your question", exact=True).press("Enter")
            streaming = ".turn-assistant[aria-busy=true] .content:not(:empty)"
            page.wait_for_selector(streaming)  # a part of the answer before its end
            page.wait_for_selector(".turn-assistant a.footnote")
        finally:
            fake_llm.delay = 0.0
        answer = page.inner_text(".turn-assistant .content")
        assert answer == "They are logged in the staff portal [1]."
        assert page.locator(".turn-assistant .sources li").count() >= 1
        shoot(page, "chat")
        page.click(".turn-assistant a.footnote")
        page.wait_for_selector("#passage-dialog[open] #passage")
        assert page.inner_text("#passage-dialog #passage-page").endswith("2")
        assert SICK_DAYS in page.inner_text("#passage-dialog #passage")
        shoot(page, "chat-footnote")
        page.keyboard.press("Escape")

        # Re-index the PDF from its file, then delete it (asked first).
        page.goto(document_url)
        page.get_by_role("button", name="Re-index from the file").click()
        page.wait_for_selector("#jobs .job-succeeded >> nth=2", timeout=60_000)
    page.goto(document_url)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete the document").click()
    page.wait_for_selector(".messages >> text=Deleted the document.")
    assert "handbook.pdf" not in page.inner_text("#documents")
    assert page.goto(document_url).status == 404

    page.get_by_role("button", name="Log out").click()
    page.wait_for_selector("h1:text-is('Log in')")
    assert page.goto(f"{base}/collections/{source}/").url.endswith(
        f"/login/?next=/collections/{source}/"
    )


def test_without_an_llm_the_chat_shows_the_sources_and_says_so(
    page: Any, portal_server_without_llm: PortalServer
) -> None:
    server = portal_server_without_llm
    source = server.new_source()
    with server.api(ACME, "alice") as api:
        ingested = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": SICK_DAYS * 3, "title": "Leave"},
        )
    assert ingested.status_code == 200, ingested.text
    login(page, server, "alice")
    page.click("nav a:text-is('Chat')")
    assert "No LLM is configured" in page.inner_text("#no-llm")
    for box in page.locator("#chat-form input[name=c]").all():
        box.set_checked(box.get_attribute("value") == f"mine:{source}")
    page.get_by_label("Your question", exact=True).fill("sick days")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector(".turn-assistant .content.notice")
    assert "No LLM is configured for this deployment" in page.inner_text(".turn-assistant")
    page.click(".turn-assistant a.source-link")
    page.wait_for_selector("#passage-dialog[open] #passage")
    assert SICK_DAYS in page.inner_text("#passage-dialog #passage")
