"""A chunk in its surroundings, stitched back from a document's chunks (portal.rag.passages)."""

from __future__ import annotations

from typing import Any

import pytest

from portal.rag.passages import GAP, page_passage, passage, text_between
from rag_plugin.exceptions import NotFoundError
from rag_plugin.stores.base import ChunkRecord

TEXT = "alpha beta gamma delta epsilon zeta eta theta"


def chunk(index: int, start: int, end: int, text: str = TEXT, **metadata: Any) -> ChunkRecord:
    return ChunkRecord(f"d_{index}", "d", index, text[start:end], start, end, metadata)


def test_overlapping_chunks_give_the_text_once() -> None:
    chunks = [chunk(0, 0, 16), chunk(1, 11, 30), chunk(2, 24, len(TEXT))]
    assert text_between(chunks, 0, len(TEXT)) == TEXT
    assert text_between(chunks, 6, 22) == "beta gamma delta"


def test_text_no_chunk_holds_reads_as_a_gap() -> None:
    chunks = [chunk(0, 0, 10), chunk(1, 17, 22)]
    assert text_between(chunks, 0, 22) == f"alpha beta{GAP}delta"
    assert text_between(chunks, 12, 22) == "delta"  # no gap before the first piece


def test_a_passage_has_the_text_before_and_after_it_cut_at_words() -> None:
    chunks = [chunk(0, 0, 10), chunk(1, 11, 22), chunk(2, 23, len(TEXT))]
    found = passage(chunks, 1, margin=8)
    assert (found.before, found.text, found.after) == ("…beta ", "gamma delta", " epsilon…")
    assert (found.pages, found.page_number) == ("", None)
    whole = passage(chunks, 1, margin=100)
    assert whole.before + whole.text + whole.after == TEXT


def test_a_page_passage_is_the_text_of_the_chunks_on_its_pages() -> None:
    chunks = [
        chunk(0, 0, 16, page_number=1, page_end=1),
        chunk(1, 17, 30, page_number=1, page_end=2),
        chunk(2, 31, 39, page_number=2, page_end=2),
        chunk(3, 40, len(TEXT), page_number=3, page_end=3),
    ]
    found = page_passage(chunks, 2)
    assert (found.before, found.text, found.after) == ("delta epsilon ", "zeta eta", "")
    assert (found.pages, found.page_number) == ("p. 2", 2)
    spanning = page_passage(chunks, 1)
    assert (spanning.before, spanning.after, spanning.pages) == (
        "alpha beta gamma ",
        " zeta eta",
        "pp. 1–2",
    )


def test_a_chunk_the_document_lacks_is_not_found() -> None:
    with pytest.raises(NotFoundError, match="no chunk 7; it has 1 chunks"):
        passage([chunk(0, 0, 5)], 7)
