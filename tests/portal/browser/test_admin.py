"""The tenant admin in a real headless Chromium (SPEC T3, T5).

Playwright's sync API keeps an event loop in this thread; the tests therefore talk to the
separate gunicorn server (``portal_server``) and never touch the ORM while a page is open.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.rag_plugin.files.makers import simple_pdf

pytestmark = pytest.mark.browser

ACME = "acme.localhost"


def login(page: Any, server: PortalServer, username: str) -> None:
    page.goto(f"{server.url_for(ACME)}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", server.password)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


def search_status(server: PortalServer, source: str) -> int:
    with server.api(ACME, "alice") as api:
        return api.post("/api/rag/search", json={"collection": source, "query": "x"}).status_code


def test_admin_allowlists_a_source_then_disables_it_and_the_api_follows(
    page: Any, portal_server: PortalServer
) -> None:
    source = f"web_{uuid.uuid4().hex[:8]}"
    text = "Notes about browser driven administration of the allowlist. " * 3
    # Default deny: nothing is allowed before the admin acts.
    with portal_server.api(ACME, "alice") as api:
        denied = api.post("/api/rag/ingest", json={"collection": source, "content": text})
    assert denied.status_code == 403

    login(page, portal_server, "admin")
    page.goto(f"{portal_server.url_for(ACME)}/admin/tenants/ragsource/add/")
    page.fill("#id_name", source)
    page.fill("#id_note", "added from the browser test")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert source in page.inner_text("#result_list")

    with portal_server.api(ACME, "alice") as api:
        allowed = api.post("/api/rag/ingest", json={"collection": source, "content": text})
    assert allowed.status_code == 200, allowed.text
    assert search_status(portal_server, source) == 200

    # Disable it from the change list (list_editable "enabled" checkbox).
    row = page.locator("#result_list tr", has_text=source)
    row.locator("input[type=checkbox][name$='-enabled']").uncheck()
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert search_status(portal_server, source) == 403

    page.goto(f"{portal_server.url_for(ACME)}/admin/tenants/ragsource/?q={source}")
    assert "admin" in page.inner_text("#result_list")  # who changed it is recorded


def test_admin_browses_and_deletes_documents_and_collections(
    page: Any, portal_server: PortalServer
) -> None:
    text = "The admin can read every chunk of this document with its offsets. " * 3
    with portal_server.api(ACME, "alice") as api:
        ingested = api.post(
            "/api/rag/ingest",
            json={
                "collection": "docs",
                "content": text,
                "title": "Admin view doc",
                "source": f"admin-{uuid.uuid4().hex[:6]}.md",
            },
        ).json()
    document_id = ingested["document_id"]

    login(page, portal_server, "admin")
    page.click("#rag-data-link")
    page.wait_for_selector("#rag-collections")
    row = page.locator("#rag-collections tr", has_text="alice")
    row.locator("a", has_text="docs").click()
    page.wait_for_selector("#rag-documents")
    page.click("text=Admin view doc")
    page.wait_for_selector("#rag-chunks")
    assert "The admin can read every chunk" in page.inner_text("#rag-chunks")

    page.go_back()
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"input[name='delete-{document_id}']")
    page.wait_for_selector(".messagelist .success")
    with portal_server.api(ACME, "alice") as api:
        assert api.get(f"/api/rag/documents/{document_id}").status_code == 404


def test_a_plain_user_cannot_open_the_admin(page: Any, portal_server: PortalServer) -> None:
    page.goto(f"{portal_server.url_for(ACME)}/admin/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", portal_server.password)
    page.click("input[type=submit]")
    assert "staff account" in page.inner_text(".errornote")
    assert page.url.endswith("/admin/login/")
    page.click("#workspace-hint a")  # where a user who is no admin logs in
    page.wait_for_selector("h1:text-is('Log in')")
    assert page.url.endswith("/login/")


def test_admin_adds_a_user_then_revokes_its_api_tokens(
    page: Any, portal_server: PortalServer
) -> None:
    username = f"tok_{uuid.uuid4().hex[:8]}"
    password = "revoke-me-" + uuid.uuid4().hex[:8]
    login(page, portal_server, "admin")
    page.goto(f"{portal_server.url_for(ACME)}/admin/auth/user/add/")
    page.fill("#id_username", username)
    page.fill("#id_password1", password)
    page.fill("#id_password2", password)
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")

    token = launch.login(portal_server.port, ACME, username, password)
    with portal_server.client(ACME, token) as api:
        assert api.get("/api/rag/collections").status_code == 200

    page.goto(f"{portal_server.url_for(ACME)}/admin/auth/user/?q={username}")
    page.locator("#result_list tr", has_text=username).locator("input.action-select").check()
    page.select_option("select[name=action]", "revoke_api_tokens")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist .success")
    assert username in page.inner_text(".messagelist")

    with portal_server.client(ACME, token) as api:
        refused = api.get("/api/rag/collections")
    assert refused.status_code == 401
    fresh = launch.login(portal_server.port, ACME, username, password)  # the account still works
    with portal_server.client(ACME, fresh) as api:
        assert api.get("/api/rag/collections").status_code == 200


def test_admin_cancels_a_queued_ingestion_job(page: Any, portal_server: PortalServer) -> None:
    source = portal_server.new_source()
    text = "A job that no worker takes: it waits in the queue until the admin cancels it. " * 3
    with portal_server.api(ACME, "alice") as api:
        accepted = api.post(
            "/api/rag/ingest", json={"collection": source, "content": text, "async": True}
        )
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]

    login(page, portal_server, "admin")
    page.click("#content-main a:text-is('Ingestion jobs')")
    page.fill("#searchbar", source)
    page.press("#searchbar", "Enter")
    page.wait_for_url(f"**q={source}*")  # the filtered list, not the one the row is on already
    row = page.locator("#result_list tbody tr", has_text=job_id[:8])
    assert row.locator("td.field-state").inner_text() == "Queued"
    assert row.locator("td.field-user").inner_text() == "alice"
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "cancel_jobs")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist .success")

    assert f"Cancelled 1 job(s): {job_id[:8]}." in page.inner_text(".messagelist")
    assert row.locator("td.field-state").inner_text() == "Cancelled"
    with portal_server.api(ACME, "alice") as api:
        assert api.get(f"/api/rag/jobs/{job_id}").json()["state"] == "cancelled"


def _reload_until(page: Any, selector: str, text: str, timeout: float = 120) -> None:
    """Reload the page until ``selector`` shows ``text`` (a job that a worker is running)."""
    deadline = time.monotonic() + timeout
    while text not in page.locator(selector).inner_text():
        assert time.monotonic() < deadline, page.locator(selector).inner_text()
        time.sleep(0.5)
        page.reload()


def test_admin_uploads_a_pdf_to_a_shared_collection_then_reindexes_and_deletes_it(
    page: Any, portal_server: PortalServer, tmp_path: Path
) -> None:
    source = portal_server.new_source()
    pdf = tmp_path / "handbook.pdf"
    pdf.write_bytes(
        simple_pdf([["Holiday requests go to the team lead. " * 60], ["Sick days are logged."]])
    )
    base = portal_server.url_for(ACME)
    login(page, portal_server, "admin")
    page.goto(f"{base}/admin/rag/")

    # A source the allowlist does not have: refused, with what to do.
    page.fill("#rag-upload-collection", "not_allowlisted")
    page.set_input_files("#rag-upload-files", str(pdf))
    page.click("input[name=upload]")
    page.wait_for_selector(".messagelist .error")
    assert "a tenant admin enables it in the RAG source allowlist" in page.inner_text(
        ".messagelist"
    )

    with launch.worker(portal_server.env, LOGS / "worker-test-admin.log"):
        page.fill("#rag-upload-collection", source)
        page.set_input_files("#rag-upload-files", str(pdf))
        page.click("input[name=upload]")
        page.wait_for_selector(".messagelist .success")
        assert f"Queued 1 file(s) for the shared collection '{source}'" in page.inner_text(
            ".messagelist"
        )
        _reload_until(page, "#rag-jobs tbody tr:first-child", "Succeeded")

        page.locator("#rag-collections tr", has_text=source).locator("a").click()
        row = page.locator("#rag-documents tbody tr", has_text="handbook.pdf")
        assert row.locator("td").nth(3).inner_text() == "2"  # pages
        row.locator("td a").first.click()
        page.wait_for_selector("#rag-chunks")
        assert "handbook.pdf" in page.inner_text("#rag-original")
        pages = page.locator("#rag-chunks tbody tr td:nth-child(2)").all_inner_texts()
        assert pages[0] == "p. 1"
        assert pages[-1].endswith("2")
        assert "page_count" in page.inner_text("#rag-metadata")
        page.go_back()

        # Every user of the tenant reads it, with its pages.
        with portal_server.api(ACME, "alice") as api:
            hits = api.post(
                "/api/rag/search",
                json={"collection": source, "shared": True, "query": "sick days"},
            ).json()["results"]
        assert hits[0]["metadata"]["page_end"] == 2
        document_id = hits[0]["metadata"]["document_id"]

        page.click(f"input[name='reindex-{document_id}']")
        page.wait_for_selector(".messagelist .success")
        assert f"Re-indexing document {document_id}" in page.inner_text(".messagelist")
        _reload_until(page, "#rag-jobs tbody tr:first-child", "Succeeded")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"input[name='delete-{document_id}']")
    page.wait_for_selector(".messagelist .success")
    assert page.locator("#rag-documents", has_text="handbook.pdf").count() == 0
    with psycopg.connect(portal_server.database_url) as conn:
        kept = conn.execute(
            "SELECT count(*) FROM acme.tenants_storedfile WHERE collection = %s", (source,)
        ).fetchone()
    assert kept == (0,)  # the original went with its document
