"""A chunk in its surroundings: the text around a search hit or a cited passage, and the page
it lies on, rebuilt from the document's chunks.

The store keeps a document's chunks, not its whole text, but each chunk knows where it lies
(``text[start_offset:end_offset] == content``), so the text between any two offsets is
stitched back from the chunks that cover it; overlapping chunks give it once. A chunker
leaves out the whitespace between its chunks, so a short stretch no chunk covers reads as a
space, a longer one as ``GAP``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_plugin.citations import metadata_pages, page_label
from rag_plugin.exceptions import NotFoundError
from rag_plugin.stores.base import ChunkRecord

GAP = " … "
"""Stands for document text that no chunk holds (e.g. between the pages of a file)."""
BLANK_MAX = 4
"""Uncovered stretches up to this long are taken for the whitespace between two chunks."""
SNIPPET_MARGIN = 240
"""Characters of surrounding text on each side of a search hit."""
PAGE_MARGIN = 1500
"""Characters on each side of a cited passage from a document without pages."""


@dataclass(frozen=True)
class Passage:
    """A chunk's text and the document text just before and after it."""

    chunk: ChunkRecord
    before: str
    text: str
    after: str
    pages: str
    """``"p. 3"``, ``"pp. 3–4"``, or ``""`` for a document without pages."""
    page_number: int | None


def text_between(chunks: Sequence[ChunkRecord], start: int, end: int) -> str:
    """The document's text from offset ``start`` to ``end``, as far as ``chunks`` cover it."""
    pieces: list[str] = []
    covered = first = start
    for chunk in sorted(chunks, key=lambda c: (c.start_offset, c.end_offset)):
        low, high = max(chunk.start_offset, covered), min(chunk.end_offset, end)
        if high <= low:
            continue
        if not pieces:
            first = low
        elif low > covered:
            pieces.append(_uncovered(low - covered))
        pieces.append(chunk.content[low - chunk.start_offset : high - chunk.start_offset])
        covered = high
    if not pieces:
        return ""
    # The whitespace between this stretch and the chunk next to it, on either side.
    head = " " if 0 < first - start <= BLANK_MAX else ""
    tail = " " if 0 < end - covered <= BLANK_MAX else ""
    return head + "".join(pieces) + tail


def _uncovered(length: int) -> str:
    return " " if length <= BLANK_MAX else GAP


def _in_word(chunks: Sequence[ChunkRecord], offset: int) -> bool:
    """Whether ``offset`` falls inside a word (a margin that ends there cuts the word)."""
    around = text_between(chunks, offset - 1, offset + 1)
    return len(around) == 2 and not any(c.isspace() for c in around)


def passage(chunks: Sequence[ChunkRecord], index: int, margin: int = SNIPPET_MARGIN) -> Passage:
    """Chunk ``index`` of a document with up to ``margin`` characters around it, cut back to
    whole words and marked "…" where the margin ends before the document does."""
    chunk = _chunk(chunks, index)
    start, end = chunk.start_offset, chunk.end_offset
    first = min(c.start_offset for c in chunks)
    last = max(c.end_offset for c in chunks)
    low, high = max(first, start - margin), min(last, end + margin)
    before = text_between(chunks, low, start)
    after = text_between(chunks, end, high)
    if low > first:
        before = "…" + (re.sub(r"^\S*\s*", "", before) if _in_word(chunks, low) else before)
    if high < last:
        after = (re.sub(r"\s*\S*$", "", after) if _in_word(chunks, high) else after) + "…"
    return _passage(chunk, before, after)


def page_passage(chunks: Sequence[ChunkRecord], index: int) -> Passage:
    """Chunk ``index`` on its page(s): the text of every chunk that lies on them; a document
    without pages gives ``PAGE_MARGIN`` characters around it instead."""
    chunk = _chunk(chunks, index)
    first_page, last_page = metadata_pages(chunk.metadata)
    if first_page is None or last_page is None:
        return passage(chunks, index, PAGE_MARGIN)
    on_pages = [c for c in chunks if _overlaps(c, first_page, last_page)]
    start = min(c.start_offset for c in on_pages)
    end = max(c.end_offset for c in on_pages)
    return _passage(
        chunk,
        text_between(on_pages, start, chunk.start_offset),
        text_between(on_pages, chunk.end_offset, end),
    )


def _overlaps(chunk: ChunkRecord, first_page: int, last_page: int) -> bool:
    start, end = metadata_pages(chunk.metadata)
    return start is not None and end is not None and start <= last_page and end >= first_page


def _chunk(chunks: Sequence[ChunkRecord], index: int) -> ChunkRecord:
    for chunk in chunks:
        if chunk.index == index:
            return chunk
    raise NotFoundError(f"The document has no chunk {index}; it has {len(chunks)} chunks.")


def _passage(chunk: ChunkRecord, before: str, after: str) -> Passage:
    first_page, last_page = metadata_pages(chunk.metadata)
    return Passage(
        chunk, before, chunk.content, after, page_label(first_page, last_page), first_page
    )


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as a document's page lists it (the admin's and the workspace's): the record
    and where in the file it lies."""

    chunk: ChunkRecord
    pages: str
    section: str
    has_image: bool


def chunk_row(chunk: ChunkRecord) -> ChunkRow:
    """``chunk`` with its pages (``p. 3``, ``pp. 3–4`` or empty), section and image flag."""
    section = chunk.metadata.get("section")
    return ChunkRow(
        chunk,
        page_label(*metadata_pages(chunk.metadata)),
        section if isinstance(section, str) else "",
        bool(chunk.metadata.get("has_image")),
    )
