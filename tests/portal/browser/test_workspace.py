"""The users' workspace in a real headless Chromium (SPEC U1).

As in the admin's tests, the pages come from the separate gunicorn server (``portal_server``)
and a worker process runs the jobs; data the tests only need to exist is made through the
API. Each page is photographed at a laptop's and a phone's size into ``RAG_SCREENSHOTS``
(``/tmp/workspace-shots`` by default), outside the repository.
"""

from __future__ import annotations

import html
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.rag_plugin.files.makers import simple_pdf
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.browser

ACME = "acme.localhost"
SHOTS = Path(os.environ.get("RAG_SCREENSHOTS", "/tmp/workspace-shots"))
VIEWPORTS = ((1280, 800), (390, 844))
HOLIDAYS = "Holiday requests go to the team lead. "
SICK_DAYS = "Sick days are logged in the staff portal before nine."
NOT_ALLOWED = "a tenant admin enables it in the RAG source allowlist"


def shoot(page: Any, name: str) -> None:
    """The page as it is now, at each of ``VIEWPORTS`` (whole page), then back to a laptop's."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in VIEWPORTS:
        page.set_viewport_size({"width": width, "height": height})
        # An open dialog scrolls within itself: bring its passage back into view at this size.
        page.evaluate("document.querySelector('dialog[open] #passage')?.scrollIntoView()")
        page.screenshot(path=str(SHOTS / f"{name}-{width}x{height}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


def login(page: Any, server: PortalServer, username: str, *, shot: str = "") -> None:
    page.goto(f"{server.url_for(ACME)}/login/")
    if shot:
        shoot(page, shot)
    page.get_by_label("User name", exact=True).fill(username)
    page.get_by_label("Password", exact=True).fill(server.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("h1:text-is('Collections')")


FETCH = """async ({url, method, headers, form, json}) => {
  const init = {method, headers: {...headers}, credentials: "same-origin", redirect: "manual"};
  if (form) init.body = new URLSearchParams(form);
  if (json) {
    init.body = JSON.stringify(json);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(url, init);
  return [response.status, await response.text()];
}"""


def fetch(
    page: Any,
    path: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    form: dict[str, str] | None = None,
    json: Any = None,
) -> tuple[int, str]:
    """A request from the page's own script (its cookies, its origin), as htmx or a hand-made
    form would send it: Playwright's own request client cannot resolve ``*.localhost``."""
    request = {"url": path, "method": method, "headers": headers or {}, "form": form, "json": json}
    status, text = page.evaluate(FETCH, request)
    return int(status), str(text)


def csrf_token(page: Any) -> str:
    return next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")


def test_login_refuses_a_wrong_password_and_a_staff_user_sees_the_admin_link(
    page: Any, portal_server: PortalServer
) -> None:
    base = portal_server.url_for(ACME)
    page.goto(f"{base}/search/")
    assert "/login/?next=/search/" in page.url  # every page needs a login
    page.get_by_label("User name", exact=True).fill("alice")
    page.get_by_label("Password", exact=True).fill("not-her-password")
    page.get_by_role("button", name="Log in").click()
    assert "enter a correct username and password" in page.inner_text("#login-error")
    page.get_by_label("Password", exact=True).fill(portal_server.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("h1:text-is('Search')")  # where she was going
    assert page.locator("#admin-link").count() == 0
    page.get_by_role("button", name="Log out").click()
    page.wait_for_selector("h1:text-is('Log in')")
    page.goto(f"{base}/")
    assert "/login/" in page.url

    login(page, portal_server, "admin")
    page.click("#admin-link")
    page.wait_for_selector("#user-tools")  # the tenant admin, already logged in


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


@pytest.fixture(scope="module")
def alices(portal_server: PortalServer) -> dict[str, str]:
    """A collection of alice's with a document, and a job of hers that no worker runs."""
    source = portal_server.new_source()
    with portal_server.api(ACME, "alice") as api:
        ingested = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": "Alice's secret plan. " * 10, "title": "Plan"},
        )
        queued = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": "More of it. " * 10, "async": True},
        )
    assert (ingested.status_code, queued.status_code) == (200, 202), queued.text
    return {
        "source": source,
        "document": ingested.json()["document_id"],
        "job": queued.json()["job_id"],
    }


def test_bob_never_sees_alices_collections_documents_or_jobs(
    page: Any, portal_server: PortalServer, alices: dict[str, str]
) -> None:
    source, document = alices["source"], alices["document"]
    base = portal_server.url_for(ACME)
    login(page, portal_server, "bob")
    # The name may be offered as allowed (the allowlist is the tenant's), never as his.
    for listing in ("[aria-labelledby=own-heading]", "[aria-labelledby=shared-heading]"):
        assert source not in page.inner_text(listing)

    # Pages and htmx fragments by direct URL: what is not his is not found.
    fragment = {"HX-Request": "true"}
    for path in (
        f"/collections/{source}/",
        f"/collections/{source}/documents",
        f"/collections/{source}/jobs",
        f"/documents/{document}/",
        f"/documents/{document}/file",
        f"/documents/{document}/chunks/0/",
    ):
        for headers in ({}, fragment):
            status, text = fetch(page, path, headers=headers)
            assert status == 404, (path, headers)
            assert "secret plan" not in text
    token = {"X-CSRFToken": csrf_token(page)}
    for path in (f"/documents/{document}/delete", f"/documents/{document}/reindex"):
        assert fetch(page, path, method="POST", headers=token)[0] == 404, path
    status, _ = fetch(
        page,
        "/api/rag/chat",
        method="POST",
        headers=token,
        json={"collections": [{"name": source}], "messages": [{"role": "user", "content": "x"}]},
    )
    assert status == 404

    # His own collection of the same name is empty, with none of her jobs.
    page.get_by_label("Name", exact=True).fill(source)
    page.get_by_role("button", name="Create").click()
    page.wait_for_selector("#documents")
    assert "No documents yet" in page.inner_text("#documents")
    assert "No jobs yet" in page.inner_text("#jobs")
    status, jobs = fetch(page, f"/collections/{source}/jobs", headers=fragment)
    assert status == 200
    assert alices["job"] not in jobs
    page.goto(f"{base}/search/?q=secret+plan&c=mine:{source}")
    assert "No hits." in page.inner_text("#results")

    with portal_server.api(ACME, "alice") as api:  # and her document is still there
        assert api.get(f"/api/rag/documents/{document}").status_code == 200


def test_every_form_refuses_a_post_without_its_csrf_token(
    page: Any, browser: Any, portal_server: PortalServer, alices: dict[str, str]
) -> None:
    base = portal_server.url_for(ACME)
    anonymous = browser.new_context()
    try:
        nobody = anonymous.new_page()
        nobody.goto(f"{base}/login/")  # sets the CSRF cookie; the post lacks the token
        form = {"username": "alice", "password": portal_server.password}
        status, text = fetch(nobody, "/login/", method="POST", form=form)
        assert (status, "CSRF" in text) == (403, True)
    finally:
        anonymous.close()

    login(page, portal_server, "alice")
    name, document = f"csrf_{uuid.uuid4().hex[:6]}", alices["document"]
    forms = {
        "/logout/": {},
        "/collections/new": {"name": alices["source"]},
        f"/collections/{alices['source']}/delete": {},
        f"/collections/{alices['source']}/paste": {"paste-content": "Pasted text. " * 20},
        "/upload/": {"upload-collection": alices["source"]},
        f"/documents/{document}/reindex": {},
        f"/documents/{document}/delete": {},
    }
    for path, form in forms.items():
        status, text = fetch(page, path, method="POST", form=form)
        assert (status, "CSRF" in text) == (403, True), path
    # The chat endpoint takes the login session only with the token (DRF's session check).
    question = {"collections": [{"name": name}], "messages": [{"role": "user", "content": "x"}]}
    status, text = fetch(page, "/api/rag/chat", method="POST", json=question)
    assert (status, "CSRF" in text) == (403, True)
    # With the token the same kind of post goes through, to be refused by the allowlist.
    form = {"name": name, "csrfmiddlewaretoken": csrf_token(page)}
    status, text = fetch(page, "/collections/new", method="POST", form=form)
    assert (status, NOT_ALLOWED in text) == (403, True)
    with portal_server.api(ACME, "alice") as api:
        assert api.get(f"/api/rag/documents/{document}").status_code == 200


def test_the_pages_hold_no_outside_resources(page: Any, portal_server: PortalServer) -> None:
    """No CDN: every script, style and image the pages load comes from the portal itself."""
    base = portal_server.url_for(ACME)
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    login(page, portal_server, "alice")
    for path in ("/", "/search/", "/chat/"):
        page.goto(f"{base}{path}")
    assert seen
    assert all(re.match(rf"{re.escape(base)}/", url) for url in seen), seen
    assert any(url.endswith("/static/workspace/vendor/htmx.min.js") for url in seen)


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
