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
        },
    ]


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
            "{title}, {source}, {collection}, {document_id}, {chunk_index}.",
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
