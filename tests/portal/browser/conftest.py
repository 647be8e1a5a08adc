"""Playwright driving Debian's Chromium (never a downloaded browser)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")


def _chromium() -> str:
    for candidate in CHROMIUM_CANDIDATES:
        if shutil.which(candidate):
            return candidate
    # A missing browser is a broken test environment, not a reason to skip (STYLE 8).
    raise RuntimeError(
        "Chromium is not installed: `make test` installs it with apt-get (package chromium)."
    )


# Module scope: sync Playwright keeps an event loop running in this thread while it is open,
# which would break later tests that call asyncio.run().
@pytest.fixture(scope="module")
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
