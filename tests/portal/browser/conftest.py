"""Playwright driving Debian's Chromium (never a downloaded browser), and the workspace's data."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import PortalServer
from tests.portal.browser.workspace_helpers import ACME

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")


def _chromium() -> str:
    for candidate in CHROMIUM_CANDIDATES:
        if shutil.which(candidate):
            return candidate
    # A missing browser is a broken test environment, not a reason to skip (STYLE 8).
    raise RuntimeError(
        "Chromium is not installed: `make test` installs it with apt-get (package chromium)."
    )


# Package scope, not session: sync Playwright keeps an event loop running in this thread while
# it is open, which would break later tests outside this folder that call asyncio.run(). One
# browser serves the folder's modules that run one after the other in a process.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_chromium(),
            args=[
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture(scope="package")
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
