"""Tests for the LlamaIndex node parser adapter (SPEC C7)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.ingestion.pipeline import get_transformation_hash
from llama_index.core.schema import BaseNode, Document, MetadataMode, ObjectType, TextNode

from rag_plugin.chunking import ChunkerConfig, ChunkingStrategy, TextChunker, api_chunker_config
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.node_parser import RagChunkNodeParser

MIXED_TEXT = (
    "Retrieval needs exact offsets. 引用には正確な位置が必要です。 Emoji 🌍🚀 stay whole.\n\n"
    "Second  paragraph\twith irregular   spacing. " * 3
)
# Identical windows repeat throughout: str.find from the previous start would land on the
# wrong repeat, so this text catches offsets re-derived by searching.
REPEATED_TEXT = "word " * 20


def text_nodes(nodes: Sequence[BaseNode]) -> list[TextNode]:
    """``nodes``, checked to be TextNodes."""
    assert all(isinstance(node, TextNode) for node in nodes)
    return [node for node in nodes if isinstance(node, TextNode)]


def spans(nodes: list[TextNode]) -> list[tuple[int, str, int | None, int | None]]:
    """(chunk_index, text, start, end) for each node."""
    return [(n.metadata["chunk_index"], n.text, n.start_char_idx, n.end_char_idx) for n in nodes]


PARSERS = [
    pytest.param(RagChunkNodeParser("word", 3, 1, 1), id="word"),
    pytest.param(RagChunkNodeParser("semantic", 25, 0, 1), id="semantic"),
    pytest.param(RagChunkNodeParser("character", 11, 4, 1), id="character"),
]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("text", [MIXED_TEXT, REPEATED_TEXT], ids=["mixed", "repeated"])
def test_nodes_match_the_chunker_exactly(parser: RagChunkNodeParser, text: str) -> None:
    doc = Document(text=text)
    nodes = text_nodes(parser.get_nodes_from_documents([doc]))
    expected = [
        (c.index, c.content, c.start_offset, c.end_offset)
        for c in TextChunker(parser.config).chunk(text)
    ]
    assert len(expected) > 1
    assert spans(nodes) == expected
    for node in nodes:
        assert doc.text[node.start_char_idx : node.end_char_idx] == node.text


def test_repeated_windows_keep_their_own_offsets() -> None:
    nodes = text_nodes(RagChunkNodeParser("word", 3, 1, 1)([Document(text=REPEATED_TEXT)]))
    # Windows of three words start every second word; the tenth, "word word" at 90, is the
    # first to reach the last word.
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [
        *((start, start + 14) for start in range(0, 90, 10)),
        (90, 99),
    ]


def test_nodes_inherit_metadata_and_point_to_their_document() -> None:
    doc = Document(
        text="alpha bravo charlie delta echo foxtrot",
        metadata={"title": "NATO", "chunk_index": -1},
        excluded_embed_metadata_keys=["title"],
    )
    nodes = text_nodes(RagChunkNodeParser("word", 4, 2, 1).get_nodes_from_documents([doc]))
    assert [n.metadata for n in nodes] == [
        {"title": "NATO", "chunk_index": 0},
        {"title": "NATO", "chunk_index": 1},
    ]
    assert [n.ref_doc_id for n in nodes] == [doc.id_, doc.id_]
    assert [n.source_node.node_id for n in nodes if n.source_node] == [doc.id_] * 2
    assert [n.source_node.node_type for n in nodes if n.source_node] == [ObjectType.DOCUMENT] * 2
    assert nodes[0].next_node is not None
    assert nodes[0].next_node.node_id == nodes[1].node_id
    assert nodes[1].prev_node is not None
    assert nodes[1].prev_node.node_id == nodes[0].node_id


def test_chunk_index_stays_out_of_embedded_and_prompted_text() -> None:
    doc = Document(text="alpha bravo charlie", metadata={"title": "NATO"})
    (node,) = text_nodes(RagChunkNodeParser("word", 5, 0, 1)([doc]))
    assert node.excluded_embed_metadata_keys == ["chunk_index"]
    assert node.excluded_llm_metadata_keys == ["chunk_index"]
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == (
        "title: NATO\n\nalpha bravo charlie"
    )
    assert doc.excluded_embed_metadata_keys == []
    assert doc.excluded_llm_metadata_keys == []


def test_ingestion_pipeline_runs_the_parser() -> None:
    docs = [
        Document(text="one two three four five six seven eight nine ten", id_="d1"),
        Document(text=REPEATED_TEXT, id_="d2", metadata={"source": "repeat"}),
    ]
    pipeline = IngestionPipeline(transformations=[RagChunkNodeParser.for_word(5, 2)])
    nodes = text_nodes(pipeline.run(documents=docs))
    assert [(n.ref_doc_id, *span) for n, span in zip(nodes, spans(nodes), strict=True)] == [
        ("d1", 0, "one two three four five", 0, 23),
        ("d1", 1, "four five six seven eight", 14, 39),
        ("d1", 2, "seven eight nine ten", 28, 48),
        ("d2", 0, "word word word word word", 0, 24),
        ("d2", 1, "word word word word word", 15, 39),
        ("d2", 2, "word word word word word", 30, 54),
        ("d2", 3, "word word word word word", 45, 69),
        ("d2", 4, "word word word word word", 60, 84),
        ("d2", 5, "word word word word word", 75, 99),
    ]
    assert nodes[3].metadata == {"source": "repeat", "chunk_index": 0}


def test_async_parsing_keeps_exact_offsets() -> None:
    parser = RagChunkNodeParser("word", 3, 1, 1)
    nodes = text_nodes(
        asyncio.run(parser.aget_nodes_from_documents([Document(text=REPEATED_TEXT)]))
    )
    assert [n.start_char_idx for n in nodes] == list(range(0, 100, 10))


def test_text_node_input_gives_offsets_into_that_node() -> None:
    parent = TextNode(text="abcdefghijklmnopqrstuvwxyz", id_="parent")
    nodes = text_nodes(RagChunkNodeParser("char", 12, 4, 4)([parent]))
    assert spans(nodes) == [
        (0, "abcdefghijkl", 0, 12),
        (1, "ijklmnopqrst", 8, 20),
        (2, "qrstuvwxyz", 16, 26),
    ]
    assert [n.source_node.node_id for n in nodes if n.source_node] == ["parent"] * 3


@pytest.mark.parametrize("text", ["", "   \n\t", "too short"])
def test_text_without_chunks_gives_no_nodes(text: str) -> None:
    assert RagChunkNodeParser.for_character(500, 100)([Document(text=text)]) == []


@pytest.mark.parametrize(
    ("parser", "config"),
    [
        (RagChunkNodeParser(), ChunkerConfig()),
        (RagChunkNodeParser.for_word(200, 50), ChunkerConfig.for_word(200, 50)),
        (RagChunkNodeParser.for_semantic(500), ChunkerConfig.for_semantic(500)),
        (RagChunkNodeParser.for_character(500, 100), ChunkerConfig.for_character(500, 100)),
        (
            RagChunkNodeParser.from_config(api_chunker_config("chars")),
            ChunkerConfig(ChunkingStrategy.CHARACTER, 500, 100, 20),
        ),
        (
            RagChunkNodeParser(strategy="Sentence", chunk_size=7),
            ChunkerConfig(ChunkingStrategy.SEMANTIC, 7, 50, 20),
        ),
    ],
)
def test_constructors_map_to_chunker_config(
    parser: RagChunkNodeParser, config: ChunkerConfig
) -> None:
    assert parser.config == config
    assert isinstance(parser.strategy, ChunkingStrategy)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"strategy": "tokens"},
            "Unknown chunking strategy: tokens. Use: word, semantic, character",
        ),
        ({"chunk_size": 0}, "chunk_size must be a positive integer, got 0."),
        ({"chunk_overlap": -1}, "chunk_overlap must be a non-negative integer, got -1."),
        ({"min_chunk_size": -1}, "min_chunk_size must be a non-negative integer, got -1."),
    ],
)
def test_invalid_parameters_raise_the_library_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        RagChunkNodeParser(**kwargs)
    assert str(excinfo.value) == message


def test_pipeline_cache_key_depends_on_chunking_parameters() -> None:
    docs = [Document(text="alpha bravo charlie delta", id_="d")]
    word = get_transformation_hash(docs, RagChunkNodeParser.for_word(2, 0))
    assert word == get_transformation_hash(docs, RagChunkNodeParser.for_word(2, 0))
    assert word != get_transformation_hash(docs, RagChunkNodeParser.for_word(3, 0))
    assert word != get_transformation_hash(docs, RagChunkNodeParser.for_character(2, 0))
