"""Context blocks, sources and citation parsing (SPEC R4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from rag_plugin.citations import (
    DEFAULT_CONTEXT_SEPARATOR,
    ContextResult,
    build_context,
    build_context_result,
    build_sources,
    cited_footnotes,
    validate_context_template,
)
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.rerank import LexicalReranker
from rag_plugin.retrieval import RetrievedChunk
from rag_plugin.stores.base import ChunkRecord, CollectionInfo

COLLECTION = CollectionInfo("handbook", None, 3, "table")


def retrieved(
    chunk_id: str,
    content: str,
    score: float,
    metadata: Mapping[str, Any],
    *,
    index: int = 0,
    start: int = 0,
) -> RetrievedChunk:
    chunk = ChunkRecord(
        chunk_id, chunk_id.rsplit("_", 1)[0], index, content, start, start + len(content), metadata
    )
    return RetrievedChunk(chunk, score, COLLECTION, "Handbook", score)


REFUND = retrieved(
    "d1_0", "Refunds within 30 days.", 0.87654, {"title": "Policies", "source": "policies.md"}
)
SHIPPING = retrieved(
    "d2_3", "Shipping takes {five} days.", 0.5, {"source": "shipping.md"}, index=3, start=120
)
PHOTO = retrieved("d3_1", "A form.", 0.25, {"has_image": True}, index=1, start=9)


def test_context_blocks_are_numbered_and_separated() -> None:
    context = build_context([REFUND, SHIPPING])
    assert context == (
        "[Document 1]\nRefunds within 30 days.\n\n---\n\n[Document 2]\nShipping takes {five} days."
    )
    assert DEFAULT_CONTEXT_SEPARATOR == "\n\n---\n\n"


def test_custom_template_and_separator() -> None:
    template = "[{n}] {title} ({collection}, {source}#{chunk_index}, doc {document_id}):\n{content}"
    context = build_context([REFUND, SHIPPING, PHOTO], template, separator="\n")
    assert context.split("\n") == [
        "[1] Policies (Handbook, policies.md#0, doc d1):",
        "Refunds within 30 days.",
        # no title: the source is the title
        "[2] shipping.md (Handbook, shipping.md#3, doc d2):",
        "Shipping takes {five} days.",
        # neither: "Untitled", and an empty source
        "[3] Untitled (Handbook, #1, doc d3):",
        "A form.",
    ]


def test_sources_describe_each_block() -> None:
    (reranked_refund,) = LexicalReranker().rerank("refunds", [REFUND])
    sources = build_sources([reranked_refund, SHIPPING, PHOTO])
    assert [s.as_dict() for s in sources] == [
        {
            "footnote_id": 1,
            "chunk_id": "d1_0",
            "document_id": "d1",
            "title": "Policies",
            "source": "policies.md",
            "collection": "Handbook",
            "relevance": 0.877,  # post-weight score, not the rerank score
            # 0.85·0.87654 + 0.15·1 = 0.895059
            "rerank": {"mode": "lexical", "alpha": 0.15, "overlap": 1.0, "score": 0.8951},
            "chunk_index": 0,
            "start_offset": 0,
            "end_offset": 23,
            "excerpt": "Refunds within 30 days.",
            "has_image": False,
            "page_number": None,
            "page_end": None,
            "citation": "Policies",
            "metadata": {"title": "Policies", "source": "policies.md"},
        },
        {
            "footnote_id": 2,
            "chunk_id": "d2_3",
            "document_id": "d2",
            "title": "shipping.md",
            "source": "shipping.md",
            "collection": "Handbook",
            "relevance": 0.5,
            "rerank": None,
            "chunk_index": 3,
            "start_offset": 120,
            "end_offset": 147,
            "excerpt": "Shipping takes {five} days.",
            "has_image": False,
            "page_number": None,
            "page_end": None,
            "citation": "shipping.md",
            "metadata": {"source": "shipping.md"},
        },
        {
            "footnote_id": 3,
            "chunk_id": "d3_1",
            "document_id": "d3",
            "title": "Untitled",
            "source": "",
            "collection": "Handbook",
            "relevance": 0.25,
            "rerank": None,
            "chunk_index": 1,
            "start_offset": 9,
            "end_offset": 16,
            "excerpt": "A form.",
            "has_image": True,
            "page_number": None,
            "page_end": None,
            "citation": "Untitled",
            "metadata": {"has_image": True},
        },
    ]


MANUAL = {"title": "Manual", "source": "manual.pdf"}
ON_PAGE_3 = retrieved("d4_0", "Press reset.", 0.9, {**MANUAL, "page_number": 3, "page_end": 3})
ACROSS_PAGES = retrieved(
    "d4_1", "Hold it down.", 0.8, {**MANUAL, "page_number": 3, "page_end": 4}, index=1, start=13
)


def test_a_passage_of_a_file_is_cited_with_its_page() -> None:
    result = build_context_result([ON_PAGE_3, ACROSS_PAGES, REFUND])
    assert result.context.split(DEFAULT_CONTEXT_SEPARATOR) == [
        "[Document 1] Manual, p. 3\nPress reset.",
        "[Document 2] Manual, pp. 3\u20134\nHold it down.",
        # a passage without pages keeps the seed's block
        "[Document 3]\nRefunds within 30 days.",
    ]
    assert [(s.page_number, s.page_end, s.citation) for s in result.sources] == [
        (3, 3, "Manual, p. 3"),
        (3, 4, "Manual, pp. 3\u20134"),
        (None, None, "Policies"),
    ]
    assert result.sources[1].as_dict()["metadata"]["page_end"] == 4


def test_templates_may_place_the_page() -> None:
    context = build_context([ON_PAGE_3, REFUND], "{title} ({page}): {content}", separator="|")
    assert context == "Manual (p. 3): Press reset.|Policies (): Refunds within 30 days."


@pytest.mark.parametrize(
    "pages",
    [
        {"page_number": 0},
        {"page_number": -2},
        {"page_number": True},
        {"page_number": "3"},
        {"page_number": 2.5},
        {"page_end": 4},
    ],
)
def test_metadata_that_is_not_a_page_is_no_page(pages: dict[str, Any]) -> None:
    (source,) = build_sources([retrieved("d5_0", "Text.", 0.5, {**MANUAL, **pages})])
    assert (source.page_number, source.page_end, source.citation) == (None, None, "Manual")


def test_a_page_end_before_its_start_is_the_start() -> None:
    bad_end = retrieved("d6_0", "Text.", 0.5, {**MANUAL, "page_number": 5, "page_end": 2})
    (source,) = build_sources([bad_end])
    assert (source.page_number, source.page_end) == (5, 5)


def test_context_result_numbers_match() -> None:
    result = build_context_result([REFUND, SHIPPING])
    assert result.context.startswith("[Document 1]\nRefunds")
    assert [s.footnote_id for s in result.sources] == [1, 2]
    assert result.source(2) == result.sources[1]
    assert (result.source(0), result.source(3)) == (None, None)


def test_no_chunks_give_an_empty_context() -> None:
    assert build_context_result([]) == ContextResult("", ())


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "[{number}] {content}",
            "The context template uses the unknown placeholder {number}; use: {n}, {content}, "
            "{title}, {source}, {collection}, {document_id}, {chunk_index}, {page}, "
            "{page_citation}.",
        ),
        ("{content.upper}", "unknown placeholder {content.upper}"),
        ("{n!r} {content}", "unknown placeholder {n!r}"),
        ("{n:>3} {content}", "unknown placeholder {n:>3}"),
        ("{0} {content}", "unknown placeholder {0}"),
        ("[{n}] {title}", "never inserts {content}"),
        ("{content", "is malformed"),
    ],
)
def test_template_validation(template: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        build_context([REFUND], template)
    assert message in str(caught.value)


def test_literal_braces_are_allowed() -> None:
    assert validate_context_template("{{{n}}} {content}") == "{{{n}}} {content}"
    assert build_context([REFUND], "{{{n}}} {content}") == "{1} Refunds within 30 days."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Refunds take 30 days [1]. Shipping takes five [2].", [1, 2]),
        ("Both [2][1], again [1].", [2, 1]),
        ("See [1, 3] and [ 2 ].", [1, 3, 2]),
        ("As [Document 2] says.", [2]),
        ("No citations here; arrays like x[i] or [a] do not count.", []),
        ("Big [12] numbers.", [12]),
    ],
)
def test_cited_footnotes(answer: str, expected: list[int]) -> None:
    assert cited_footnotes(answer) == expected
