"""From a page's lines to its text: columns read in order, running headers and footers
dropped, words hyphenated at a line end joined.

These are pure functions over lines and strings, so each rule is tested on hand-made lines;
:mod:`rag_plugin.files.pdf` feeds them what PDFium reads and :mod:`rag_plugin.files.ocr`
what Tesseract recognises.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# PDFium writes a hyphen it judged to end a line inside a word as U+FFFE (or 0x02 in some
# calls) and drops the line break after it: the word is already whole without the mark.
_PDFIUM_HYPHEN_MARKS = str.maketrans("", "", "\ufffe\x02")
# A hyphen (or soft or Unicode hyphen) after a letter, a line break, then more letters.
_LINE_END_HYPHEN = re.compile(r"([^\W\d_])[-\u00ad\u2010]\n[ \t]*([^\W\d_])")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")

RUNNING_MIN_PAGES = 3
"""Headers and footers are told apart from text only in documents of at least this many pages."""
RUNNING_SHARE = 0.6
"""A line is a header or footer when it is at a page's edge on at least this share of pages."""
RUNNING_EDGE = 2
"""How many lines at the top and at the bottom of a page may be a header or footer."""

_Key = tuple[object, ...]
_Keyed = tuple[int, set[_Key]]
_MAX_NUMBERS = 4
"""Numbers of a line tried as its page number (a date in a footer has three before it)."""
_MAX_DIGITS = 9
_GUTTER_CANDIDATES = 21
_MIN_SIDE_BY_SIDE = 3


@dataclass(frozen=True, slots=True)
class Line:
    """A line of text and its box in PDF points (``bottom < top``, y grows upwards)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float


def reading_order(lines: Sequence[Line]) -> list[Line]:
    """``lines`` in reading order: a page with two columns side by side is read column by
    column (between lines that cross the gap, such as a title); any other page keeps the
    order of its content, which is how its author's tool wrote it."""
    gutter = _gutter(lines)
    if gutter is None:
        return list(lines)
    ordered: list[Line] = []
    band: list[Line] = []
    for line in sorted(lines, key=lambda line: -line.top):
        if line.left < gutter < line.right:
            ordered.extend(_by_column(band, gutter))
            band = []
            ordered.append(line)
        else:
            band.append(line)
    ordered.extend(_by_column(band, gutter))
    return ordered


def _by_column(band: Sequence[Line], gutter: float) -> list[Line]:
    return [line for line in band if line.right <= gutter] + [
        line for line in band if line.right > gutter
    ]


def _gutter(lines: Sequence[Line]) -> float | None:
    """The x of the gap between two columns, or None when no lines stand side by side.

    Candidates lie across the middle half of the text's width. The gap is where the most
    lines on the left share their height with a line on the right (at least
    ``_MIN_SIDE_BY_SIDE``); of the candidates that tie, the middle one, so that a centred
    title crosses it rather than being taken for part of a column.
    """
    if len(lines) < 2 * _MIN_SIDE_BY_SIDE:
        return None
    low = min(line.left for line in lines)
    width = max(line.right for line in lines) - low
    candidates = [
        low + width * (0.25 + 0.5 * step / (_GUTTER_CANDIDATES - 1))
        for step in range(_GUTTER_CANDIDATES)
    ]
    scores = [_side_by_side(lines, x) for x in candidates]
    best = max(scores)
    if best < _MIN_SIDE_BY_SIDE:
        return None
    tied = [x for x, score in zip(candidates, scores, strict=True) if score == best]
    return tied[len(tied) // 2]


def _side_by_side(lines: Sequence[Line], x: float) -> int:
    """How many lines left of ``x`` overlap in height with some line right of ``x``."""
    right = sorted((line.bottom, line.top) for line in lines if line.left >= x)
    if len(right) < _MIN_SIDE_BY_SIDE:
        return 0
    # Merge the right side's heights into disjoint intervals to test each left line by bisection.
    merged: list[list[float]] = []
    for bottom, top in right:
        if merged and bottom <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], top)
        else:
            merged.append([bottom, top])
    tops = [interval[1] for interval in merged]
    count = 0
    for line in lines:
        if line.right > x:
            continue
        # The first interval that ends above the line's bottom is the only one that may overlap.
        index = bisect_right(tops, line.bottom)
        if index < len(merged) and merged[index][0] < line.top:
            count += 1
    return count


def running_keys(line: str, page_index: int) -> set[_Key]:
    """What a header or footer line may have in common from page to page: its text (case and
    spacing aside), or its text with one number that follows the page's position by a fixed
    offset ("Page 3 of 12" on the third page, "- 1 -" on the first page after a cover).

    A number that does not follow the pages ("Chapter 3" opening pages 10 and 15) keeps the
    line apart from its neighbours, so chapter headings are not taken for headers.
    """
    text = _SPACES.sub(" ", line.casefold()).strip()
    if not text:
        return set()
    keys: set[_Key] = {("text", text)}
    numbers = _DIGITS.findall(text)
    if numbers:
        pattern = _DIGITS.sub("#", text)
        for position, number in enumerate(numbers[:_MAX_NUMBERS]):
            if len(number) <= _MAX_DIGITS:
                keys.add(("paged", pattern, position, int(number) - page_index))
    return keys


def drop_running_lines(pages: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each page's lines without its headers and footers.

    A header is one of the first :data:`RUNNING_EDGE` non-blank lines of a page that shares
    one of its :func:`running_keys` with lines among the first of at least
    :data:`RUNNING_SHARE` of the pages; a footer likewise at the bottom. Documents of fewer
    than :data:`RUNNING_MIN_PAGES` pages keep every line: two pages are too few to tell.
    """
    if len(pages) < RUNNING_MIN_PAGES:
        return [list(lines) for lines in pages]
    # For the top and the bottom edge: each page's edge lines as (position, keys).
    sides: tuple[list[list[_Keyed]], list[list[_Keyed]]] = ([], [])
    for index, lines in enumerate(pages):
        for side, positions in zip(sides, _edges(lines), strict=True):
            side.append([(i, running_keys(lines[i], index)) for i in positions])
    running = [_frequent(side, len(pages)) for side in sides]
    kept: list[list[str]] = []
    for index, lines in enumerate(pages):
        dropped = {
            i
            for side, frequent in zip(sides, running, strict=True)
            for i, keys in side[index]
            if keys & frequent
        }
        kept.append([line for i, line in enumerate(lines) if i not in dropped])
    return kept


def _edges(lines: Sequence[str]) -> tuple[list[int], list[int]]:
    """The positions of the first and of the last :data:`RUNNING_EDGE` non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return filled[:RUNNING_EDGE], filled[-RUNNING_EDGE:]


def _frequent(edges: Sequence[list[_Keyed]], pages: int) -> set[_Key]:
    """The keys found at this edge on at least :data:`RUNNING_SHARE` of the ``pages``."""
    seen: Counter[_Key] = Counter()
    for lines in edges:
        seen.update(set().union(*(keys for _, keys in lines)))
    return {key for key, count in seen.items() if count >= RUNNING_SHARE * pages}


def join_hyphenated(text: str) -> str:
    """``text`` with words split by a hyphen at a line end made whole again
    ("infor-\\nmation" → "information"), where the next line goes on in lower case."""
    text = text.translate(_PDFIUM_HYPHEN_MARKS)

    def join(match: re.Match[str]) -> str:
        if match.group(2).islower():
            return match.group(1) + match.group(2)
        return match.group(0)

    return _LINE_END_HYPHEN.sub(join, text)
