"""HTML pages: the main content without navigation or footers, tables as rows, one page."""

from __future__ import annotations

import pytest
import trafilatura

from rag_plugin.files import HTML, Page, Section, extract
from tests.rag_plugin.files import makers
from tests.rag_plugin.files.conftest import FIXTURES

ARTICLE_TEXT = (
    "River otters\n\n"
    "The Eurasian otter lives along rivers and lakes across Europe. It eats mostly fish and "
    "is active at night.\n\n"
    "Population\n\n"
    "Populations fell sharply in the twentieth century because of pesticides, and have "
    "recovered since the 1980s in most countries.\n\n"
    "Country | Otters\nGermany | 6000\nFrance | 2500\n\n"
    "Conservation continues with river restoration projects in many regions."
)


def test_the_main_content_is_kept_with_the_table_as_rows() -> None:
    document = extract(makers.ARTICLE_HTML, filename="otters.html")

    assert document.text == ARTICLE_TEXT
    assert document.pages == (Page(1, 0, len(ARTICLE_TEXT)),)
    assert (document.title, document.media_type) == ("Otters of the Rhine", HTML)
    assert document.metadata == {"page_count": 1}


@pytest.mark.parametrize(
    "boilerplate",
    ["Home", "About us", "Subscribe", "beavers", "Copyright", "Privacy"],
)
def test_navigation_banners_sidebars_and_footers_are_dropped(boilerplate: str) -> None:
    assert boilerplate in makers.ARTICLE_HTML.decode()
    assert boilerplate not in extract(makers.ARTICLE_HTML).text


def test_headings_are_sections() -> None:
    document = extract(makers.ARTICLE_HTML)
    text = document.text

    assert document.sections == (
        Section(0, text.index("\n\nPopulation\n"), "River otters", 1),
        Section(text.index("Population\n"), len(text), "Population", 2),
    )
    assert document.section_at(text.index("France")) == "Population"


def test_a_page_of_one_list_is_a_list() -> None:
    page = (
        b"<html><head><title>Chores</title></head><body><nav>Menu</nav>"
        b"<ul><li>Feed the <b>otters</b></li><li>Clean the pool</li></ul>"
        b"<footer>Contact</footer></body></html>"
    )

    document = extract(page)

    assert document.text == "Feed the otters\nClean the pool"
    assert document.title == "Chores"


def test_where_trafilatura_finds_no_main_text_the_body_is_read_without_navigation() -> None:
    links = (
        b"<ul><li><a href='/feed'>Feed the otters</a></li>"
        b"<li><a href='/pool'>Clean the pool</a></li></ul>"
    )
    # A list of links is no main text to trafilatura (the boilerplate is gone before it looks).
    assert trafilatura.bare_extraction(b"<html><body>" + links, favor_precision=True) is None
    page = b"<html><body><header>Otter Zoo</header><nav><a href='/'>Menu</a></nav>"

    document = extract(page + links + b"<footer>Contact</footer></body></html>")

    assert document.text == "Feed the otters\nClean the pool"


@pytest.mark.parametrize(
    ("page", "filename", "title"),
    [
        (
            b"<html><body><h1>Otter <i>facts</i></h1><p>They swim.</p></body></html>",
            "",
            "Otter facts",
        ),
        (
            b"<html><body><p>They swim.</p></body></html>",
            "otter_facts-2024.html",
            "otter facts 2024",
        ),
    ],
)
def test_without_a_title_element_the_first_h1_then_the_file_name_is_the_title(
    page: bytes, filename: str, title: str
) -> None:
    assert extract(page, filename=filename).title == title


def test_utf8_without_a_declared_charset_and_a_declared_latin1_both_decode() -> None:
    body = "<p>Un caf\u00e9 cr\u00e8me, servi chaud avec du lait mouss\u00e9 dans une tasse.</p>"
    utf8 = f"<html><body>{body}</body></html>".encode()
    latin1 = (f"<html><head><meta charset='iso-8859-1'></head><body>{body}</body></html>").encode(
        "latin-1"
    )

    assert (
        extract(utf8).text
        == extract(latin1).text
        == ("Un caf\u00e9 cr\u00e8me, servi chaud avec du lait mouss\u00e9 dans une tasse.")
    )


def test_an_empty_page_is_an_empty_document() -> None:
    document = extract(b"<html><!-- nothing --></html>", filename="blank.html")

    assert (document.text, document.pages, document.title) == ("", (Page(1, 0, 0),), "blank")


def test_a_real_manual_page_keeps_its_text_and_drops_its_navigation() -> None:
    data = (FIXTURES / "libffi-the-basics.html").read_bytes()
    assert b'Next: <a href="Simple-Example.html"' in data

    document = extract(data, filename="The-Basics.html")

    assert document.title == "The Basics (libffi: the portable foreign function interface library)"
    assert document.text.startswith(
        "libffi assumes that you have a pointer to the function you wish\nto call"
    )
    assert "Simple Example" not in document.text
    assert "To call a function using an initialized ffi_cif, use the\nffi_call function:" in (
        document.text
    )
    assert len(document.pages) == 1
