"""Page layout rules on hand-made lines: columns, running headers and footers, hyphens."""

from __future__ import annotations

import pytest

from rag_plugin.files.layout import (
    Line,
    drop_running_lines,
    join_hyphenated,
    reading_order,
    running_keys,
)


def line(text: str, left: float, top: float, width: float = 200) -> Line:
    return Line(text, left=left, bottom=top - 10, right=left + width, top=top)


def test_two_columns_are_read_left_column_first_between_full_width_lines() -> None:
    # Written right column first, as a layout tool may; y grows upwards.
    lines = [
        line("Title across both columns", 100, 800, 300),
        *(line(f"right {i}", 320, 760 - 20 * i) for i in range(4)),
        *(line(f"left {i}", 50, 760 - 20 * i) for i in range(4)),
        line("Note across both columns", 50, 600, 470),
        line("right tail", 320, 560),
        line("left tail", 50, 560),
    ]

    ordered = [found.text for found in reading_order(lines)]

    assert ordered == [
        "Title across both columns",
        *(f"left {i}" for i in range(4)),
        *(f"right {i}" for i in range(4)),
        "Note across both columns",
        "left tail",
        "right tail",
    ]


def test_a_single_column_keeps_the_order_it_was_written_in() -> None:
    # Short lines of a paragraph end left of centre, but nothing stands beside them.
    lines = [line(f"line {i}", 50, 800 - 20 * i, 100 + 40 * (i % 3)) for i in range(10)]

    assert reading_order(lines) == lines


def test_two_lines_side_by_side_are_not_enough_to_make_columns() -> None:
    lines = [line("a", 50, 800), line("b", 320, 800), line("c", 50, 700, 470)]
    lines += [line("d", 50, 780), line("e", 320, 780), line("f", 50, 600, 470)]

    assert reading_order(lines) == lines


@pytest.mark.parametrize(
    ("text", "index", "key"),
    [
        ("  Annual   REPORT 2024 ", 0, ("text", "annual report 2024")),
        ("Page 3 of 12", 2, ("paged", "page # of #", 0, 1)),
        ("Page 3 of 12", 2, ("paged", "page # of #", 1, 10)),
        ("- 7 -", 5, ("paged", "- # -", 0, 2)),
    ],
)
def test_running_keys_are_the_text_and_each_number_against_the_page(
    text: str, index: int, key: tuple[object, ...]
) -> None:
    assert key in running_keys(text, index)


BODIES = ["Otters swim.", "Beavers build.", "Herons wait.", "Voles dig.", "Eels travel."]


def test_headers_and_footers_on_most_pages_are_dropped() -> None:
    pages = [
        ["ANNUAL  report", body, BODIES[n + 1], f"Page {n + 1} of 5"]
        for n, body in enumerate(BODIES[:4])
    ]
    # The last page lacks the header: 4 of 5 pages (80 %) is enough.
    pages.append([BODIES[4], "Page 5 of 5"])

    kept = drop_running_lines(pages)

    assert kept == [[body, BODIES[n + 1]] for n, body in enumerate(BODIES[:4])] + [[BODIES[4]]]


def test_printed_page_numbers_may_be_offset_from_the_page_position() -> None:
    # A cover page without a number, then pages numbered from 1.
    pages = [["Cover"], *([body, f"- {n} -"] for n, body in enumerate(BODIES[1:], start=1))]

    assert drop_running_lines(pages) == [["Cover"], *([body] for body in BODIES[1:])]


@pytest.mark.parametrize(("share", "dropped"), [(3, True), (2, False)])
def test_a_header_must_be_on_sixty_percent_of_the_pages(share: int, dropped: bool) -> None:
    pages = [["Field notes", body] if n < share else [body] for n, body in enumerate(BODIES)]

    first = drop_running_lines(pages)[0]

    assert first == ([BODIES[0]] if dropped else ["Field notes", BODIES[0]])


def test_numbered_headings_that_do_not_follow_the_pages_stay() -> None:
    pages = [[f"Chapter {n * 2 + 1}", body] for n, body in enumerate(BODIES)]

    assert drop_running_lines(pages) == pages


def test_a_repeated_line_in_the_middle_of_pages_stays() -> None:
    pages = [
        ["Top", body, "Sidebar", "Repeated middle", "Sidebar", body, "Bottom"] for body in BODIES
    ]

    kept = drop_running_lines(pages)

    assert kept == [[body, "Sidebar", "Repeated middle", "Sidebar", body] for body in BODIES]


def test_two_pages_are_too_few_to_tell_a_header() -> None:
    pages = [["Header", "one"], ["Header", "two"]]

    assert drop_running_lines(pages) == pages


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("infor-\nmation", "information"),
        ("infor\ufffemation", "information"),  # PDFium's own mark, line break already gone
        ("infor\x02mation", "information"),
        ("infor\u00ad\n  mation follows", "information follows"),
        ("well-\nKnown", "well-\nKnown"),  # a capital: a new sentence or a name
        ("version 2-\n3", "version 2-\n3"),  # not a word
        ("a -\nb", "a -\nb"),  # a dash after a space
    ],
)
def test_words_hyphenated_at_a_line_end_are_joined(text: str, joined: str) -> None:
    assert join_hyphenated(text) == joined
