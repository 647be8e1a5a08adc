"""ExtractedDocument: pages tile the text exactly, and a chunk's span maps to its pages."""

from __future__ import annotations

import json

import pytest

from rag_plugin.chunking import ChunkerConfig, ChunkingStrategy, TextChunker
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.files.document import (
    DocumentBuilder,
    ExtractedDocument,
    Page,
    PageRange,
    Section,
)


def three_pages() -> ExtractedDocument:
    """Pages "alpha beta" [0, 10), "" [12, 12) (a scan, with an image), "gamma" [14, 19)."""
    builder = DocumentBuilder()
    builder.add_block("alpha beta")
    builder.new_page(has_image=True, needs_ocr=True)
    builder.new_page()
    builder.add_block("gamma")
    return builder.build(title="T", media_type="application/pdf")


def test_builder_joins_pages_with_the_separator_and_records_exact_spans() -> None:
    document = three_pages()

    assert document.text == "alpha beta\n\n\n\ngamma"
    assert document.pages == (
        Page(1, 0, 10),
        Page(2, 12, 12, has_image=True, needs_ocr=True),
        Page(3, 14, 19),
    )
    assert [document.page_text(n) for n in (1, 2, 3)] == ["alpha beta", "", "gamma"]
    assert document.metadata == {"page_count": 3, "needs_ocr_pages": [2]}
    assert document.needs_ocr_pages == (2,)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 5, PageRange(1, 1, False)),  # "alpha"
        (6, 10, PageRange(1, 1, False)),  # ends exactly where page 1 ends
        (10, 12, PageRange(1, 1, False)),  # only the separator: the page before it
        (6, 19, PageRange(1, 3, True)),  # across the empty scanned page
        (14, 19, PageRange(3, 3, False)),
        (12, 19, PageRange(2, 3, True)),
    ],
)
def test_pages_of_a_span_are_where_it_starts_and_ends(
    start: int, end: int, expected: PageRange
) -> None:
    assert three_pages().pages_of(start, end) == expected


def test_a_chunks_metadata_names_its_pages_images_and_section() -> None:
    builder = DocumentBuilder()
    builder.add_block("Intro", heading_level=1)
    builder.add_block("alpha beta")
    builder.new_page(has_image=True)
    builder.add_block("gamma delta")
    document = builder.build(title="T", media_type="application/pdf")
    chunks = TextChunker(ChunkerConfig(ChunkingStrategy.WORD, 2, 0, 1)).chunk(document.text)

    assert [(c.content, document.chunk_metadata(c)) for c in chunks] == [
        (
            "Intro\n\nalpha",
            {"page_number": 1, "page_end": 1, "has_image": False, "section": "Intro"},
        ),
        ("beta\n\ngamma", {"page_number": 1, "page_end": 2, "has_image": True, "section": "Intro"}),
        ("delta", {"page_number": 2, "page_end": 2, "has_image": True, "section": "Intro"}),
    ]
    assert "section" not in three_pages().chunk_metadata(chunks[0])  # no headings there


@pytest.mark.parametrize(("start", "end"), [(5, 5), (-1, 3), (0, 20), (7, 3)])
def test_pages_of_an_empty_or_outside_span_is_refused(start: int, end: int) -> None:
    with pytest.raises(InvalidInputError, match=r"not a non-empty span of a text of 19"):
        three_pages().pages_of(start, end)


def test_blocks_on_a_page_are_paragraphs_and_headings_open_sections() -> None:
    builder = DocumentBuilder()
    builder.add_block("  preface  ")
    builder.add_block("Intro", heading_level=1)
    builder.add_block("one")
    builder.add_block("   ")  # dropped
    builder.new_page()
    builder.add_block("two")
    builder.add_block("Details", heading_level=2)
    builder.add_block("three")

    document = builder.build(title="", media_type="text/html")

    assert document.text == "preface\n\nIntro\n\none\n\ntwo\n\nDetails\n\nthree"
    assert document.sections == (Section(9, 24, "Intro", 1), Section(26, 40, "Details", 2))
    assert document.text[9:24] == "Intro\n\none\n\ntwo"
    assert [document.section_at(i) for i in (0, 8, 9, 23, 24, 25, 26, 39)] == [
        None,
        None,
        "Intro",
        "Intro",
        None,  # the separator before the next heading belongs to no section
        None,
        "Details",
        "Details",
    ]


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ((), "at least one page"),
        ((Page(1, 0, 5), Page(2, 6, 9)), "starting after the previous one"),
        ((Page(1, 0, 4), Page(3, 6, 9)), "numbered from 1"),
        ((Page(1, 0, 4),), "the pages end at 4 but the text has 9 characters"),
    ],
)
def test_pages_that_do_not_tile_the_text_are_refused(pages: tuple[Page, ...], message: str) -> None:
    with pytest.raises(InvalidInputError, match=f"(?i){message}"):
        ExtractedDocument("abcd\n\nefg", pages, "t", "text/plain")


def test_a_page_must_follow_the_separator_not_other_text() -> None:
    with pytest.raises(InvalidInputError, match="Page 2 spans"):
        ExtractedDocument("abcd  efg", (Page(1, 0, 4), Page(2, 6, 9)), "t", "text/plain")


def test_json_round_trip_keeps_everything_and_is_plain_json() -> None:
    builder = DocumentBuilder()
    builder.add_block("Heading", heading_level=1)
    builder.add_block("body")
    builder.new_page(has_image=True, ocr=True)
    builder.add_block("scanned")
    document = builder.build(title="T", media_type="application/pdf", metadata={"author": "A"})

    encoded = json.dumps(document.as_json())

    assert ExtractedDocument.from_json(json.loads(encoded)) == document


def test_from_json_refuses_what_is_not_a_document() -> None:
    with pytest.raises(InvalidInputError, match="Not an extracted document's JSON"):
        ExtractedDocument.from_json({"text": "x"})
