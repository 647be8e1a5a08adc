"""The workspace in Chromium: logins, another user's pages, CSRF, no outside resources (SPEC U1)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.conftest import PortalServer
from tests.portal.browser.workspace_helpers import ACME, NOT_ALLOWED, csrf_token, fetch, login

pytestmark = pytest.mark.browser


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
