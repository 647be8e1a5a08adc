"""Markdown, text and JSON(L): the content unchanged on one page, as ragctl has read it."""

from __future__ import annotations

import pytest

from rag_plugin.files import JSON, JSONL, MARKDOWN, TEXT, Page, Section, extract

MARKDOWN_TEXT = "Intro line.\r\n```sh\n# not a heading\n```\n# Otters\nThey swim.\n## Diet\nFish.\n"


def test_markdown_is_kept_exactly_with_its_headings_as_sections() -> None:
    document = extract(b"\xef\xbb\xbf" + MARKDOWN_TEXT.encode(), filename="notes.md")

    assert document.text == MARKDOWN_TEXT  # the byte-order mark aside
    assert document.pages == (Page(1, 0, len(MARKDOWN_TEXT)),)
    assert (document.title, document.media_type) == ("Otters", MARKDOWN)
    otters, diet = MARKDOWN_TEXT.index("# Otters"), MARKDOWN_TEXT.index("## Diet")
    assert document.sections == (
        Section(otters, diet - 1, "Otters", 1),
        Section(diet, len(MARKDOWN_TEXT), "Diet", 2),
    )
    assert document.section_at(MARKDOWN_TEXT.index("not a heading")) is None


@pytest.mark.parametrize(
    ("data", "filename", "media_type", "title"),
    [
        (b"just words", "field-notes_2024.txt", TEXT, "field notes 2024"),
        (b"just words", "", TEXT, "document"),
        (b'{"name": "otter"}', "animals.json", JSON, "animals"),
        (b'{"a": 1}\n{"a": 2}\n', "rows.jsonl", JSONL, "rows"),
    ],
)
def test_text_and_json_keep_their_content_and_take_the_title_from_the_name(
    data: bytes, filename: str, media_type: str, title: str
) -> None:
    document = extract(data, filename=filename)

    assert (document.text, document.media_type, document.title) == (
        data.decode(),
        media_type,
        title,
    )
