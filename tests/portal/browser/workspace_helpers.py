"""Driving the users' workspace (SPEC U1) in the browser tests: login, screenshots, fetch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.conftest import PortalServer

# As in the admin's tests, the pages come from the separate gunicorn server (``portal_server``)
# and a worker process runs the jobs; data the tests only need to exist is made through the API.
ACME = "acme.localhost"
# Each page is photographed at a laptop's and a phone's size, outside the repository.
SHOTS = Path(os.environ.get("RAG_SCREENSHOTS", "/tmp/workspace-shots"))
VIEWPORTS = ((1280, 800), (390, 844))
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
