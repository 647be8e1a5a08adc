"""The retrieval playground and the profile form in a real headless Chromium (SPEC T6, issue 34).

As a new tenant admin would: a profile naming a collection the tenant does not have is refused
with the close name, then fixed; the playground explains what the profile retrieves. The
in-process tests (tests/portal/rag/test_playground.py) hold the arithmetic and that nothing is
written; this one holds the pages.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import PortalServer
from tests.portal.browser.test_admin import ACME, login

pytestmark = pytest.mark.browser

DOCUMENTS = (
    ("Refunds", "Refunds are paid within thirty days of a written request to billing."),
    ("Invoices", "Invoices are sent by the billing team on the first day of every month."),
    ("Holidays", "Holiday requests go to the team lead at least two weeks ahead."),
)


def test_admin_fixes_a_misspelt_profile_then_explains_its_retrieval_in_the_playground(
    page: Any, portal_server: PortalServer
) -> None:
    source = portal_server.new_source()
    with portal_server.api(ACME, "admin") as api:
        for title, text in DOCUMENTS:
            ingested = api.post(
                "/api/rag/ingest",
                json={
                    "collection": source,
                    "shared": True,
                    "title": title,
                    "source": f"{title.lower()}.md",
                    "content": text,
                },
            )
            assert ingested.status_code == 200, ingested.text
    base = portal_server.url_for(ACME)
    login(page, portal_server, "admin")

    # The profile names the collection with two letters swapped: refused, with the real name.
    # Letters of the fixed "src_" prefix, which always differ (two random hex digits can be
    # the same, leaving the name unchanged: a CI run timed out on that).
    name = f"pg-{uuid.uuid4().hex[:8]}"
    typo = source[0] + source[2] + source[1] + source[3:]
    page.goto(f"{base}/admin/tenants/retrievalprofile/add/")
    page.fill("#id_name", name)
    page.fill("#id_collections-0-collection", typo)
    page.click("input[name=_save]")
    page.wait_for_selector(".errorlist")
    assert f"Did you mean '{source}'?" in page.inner_text(".inline-group .errorlist")
    page.fill("#id_collections-0-collection", source)
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    row = page.locator("#result_list tr", has_text=name)
    assert f"{source} (shared, weight 1.0, priority 0)" in row.inner_text()

    # The playground, from the link on every admin page.
    page.click("#rag-playground-link")
    page.fill("#playground-q", "refnds billing")
    page.select_option("#playground-profile", name)
    page.check("#playground-typos")
    page.click("input[name=run]")
    page.wait_for_selector("#playground-result")
    section = page.locator(".playground-collection", has_text=source)
    assert "refnds → refunds" in section.locator(".playground-corrected").inner_text()
    legs = section.locator("table.playground-leg")
    assert [legs.nth(i).get_attribute("data-leg") for i in range(3)] == [
        "semantic",
        "bm25",
        "fuzzy",
    ]
    bm25 = section.locator("table.playground-leg[data-leg=bm25]")
    assert "refunds billing" in bm25.locator("caption").inner_text()
    assert "Refunds" in bm25.locator("tbody tr").first.inner_text()
    shares = section.locator("table.playground-fused tbody tr").first.locator(
        ".playground-contributions"
    )
    assert "BM25 #1: 0.5/(10.0+1)" in shares.inner_text()
    assert page.inner_text("#playground-context").startswith("[Document 1]")
    numbered = page.locator("#playground-context-rows tbody tr")
    assert numbered.count() == 3
    assert "lexical" in numbered.first.inner_text()

    # Rerank off: every passage keeps its rank.
    page.select_option("#playground-rerank", "off")
    page.click("input[name=run]")
    page.wait_for_selector("#playground-result")
    before = page.locator("#playground-context-rows td.playground-before").all_inner_texts()
    after = page.locator("#playground-context-rows td.playground-after").all_inner_texts()
    assert before == after == ["1", "2", "3"]

    # A filter that is not JSON: said on the page, the form kept as typed.
    page.fill("#playground-filters", "{topic")
    page.click("input[name=run]")
    page.wait_for_selector("#playground-error")
    assert "The filters are not valid JSON" in page.inner_text("#playground-error")
    assert page.input_value("#playground-q") == "refnds billing"
