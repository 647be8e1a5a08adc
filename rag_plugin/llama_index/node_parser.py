"""A LlamaIndex node parser that cuts documents with :class:`rag_plugin.chunking.TextChunker`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode
from llama_index.core.utils import get_tqdm_iterable

from rag_plugin.chunking import ChunkerConfig, ChunkingStrategy, TextChunker

CHUNK_INDEX_KEY = "chunk_index"

_DEFAULTS = ChunkerConfig()


class RagChunkNodeParser(NodeParser):
    """Splits each node's text into ``TextNode``s whose char offsets slice back to their text.

    ``start_char_idx``/``end_char_idx`` index the text of the node that was split (the
    document, for a pipeline's first parser), which is also the node's SOURCE relationship.
    """

    strategy: ChunkingStrategy = Field(
        default=_DEFAULTS.strategy, description="Chunking strategy: word, semantic or character."
    )
    chunk_size: int = Field(
        default=_DEFAULTS.chunk_size,
        description="Words per window (word mode) or characters per chunk (other modes).",
    )
    chunk_overlap: int = Field(
        default=_DEFAULTS.chunk_overlap,
        description="Words or characters shared by neighbouring windows (unused in semantic).",
    )
    min_chunk_size: int = Field(
        default=_DEFAULTS.min_chunk_size,
        description="Chunks with fewer characters than this are dropped.",
    )

    def __init__(
        self,
        strategy: ChunkingStrategy | str = _DEFAULTS.strategy,
        chunk_size: int = _DEFAULTS.chunk_size,
        chunk_overlap: int = _DEFAULTS.chunk_overlap,
        min_chunk_size: int = _DEFAULTS.min_chunk_size,
        **kwargs: Any,
    ) -> None:
        # Validate through ChunkerConfig so a bad value raises the library's own
        # InvalidInputError with its message, not a pydantic error.
        config = ChunkerConfig(
            ChunkingStrategy.parse(strategy), chunk_size, chunk_overlap, min_chunk_size
        )
        # A dict because mypy sees only NodeParser's own fields in super().__init__.
        fields: dict[str, Any] = {
            "strategy": config.strategy,
            "chunk_size": config.chunk_size,
            "chunk_overlap": config.chunk_overlap,
            "min_chunk_size": config.min_chunk_size,
        }
        super().__init__(**fields, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex uses when serialising this component."""
        return "RagChunkNodeParser"

    @classmethod
    def from_config(cls, config: ChunkerConfig, **kwargs: Any) -> RagChunkNodeParser:
        """A parser that chunks exactly as ``TextChunker(config)`` does."""
        return cls(
            strategy=config.strategy,
            chunk_size=config.chunk_size,
            chunk_overlap=config.chunk_overlap,
            min_chunk_size=config.min_chunk_size,
            **kwargs,
        )

    @classmethod
    def for_word(cls, chunk_size: int, chunk_overlap: int, **kwargs: Any) -> RagChunkNodeParser:
        """Windows of ``chunk_size`` words overlapping by ``chunk_overlap`` words (min 20)."""
        return cls.from_config(ChunkerConfig.for_word(chunk_size, chunk_overlap), **kwargs)

    @classmethod
    def for_semantic(cls, max_chars: int, **kwargs: Any) -> RagChunkNodeParser:
        """Sentence- and paragraph-aware chunks of at most ``max_chars`` characters (min 20)."""
        return cls.from_config(ChunkerConfig.for_semantic(max_chars), **kwargs)

    @classmethod
    def for_character(
        cls, chunk_size: int, chunk_overlap: int, **kwargs: Any
    ) -> RagChunkNodeParser:
        """Windows of ``chunk_size`` characters overlapping by ``chunk_overlap`` (min 20)."""
        return cls.from_config(ChunkerConfig.for_character(chunk_size, chunk_overlap), **kwargs)

    @property
    def config(self) -> ChunkerConfig:
        """The chunker configuration built from the current field values."""
        return ChunkerConfig(
            self.strategy, self.chunk_size, self.chunk_overlap, self.min_chunk_size
        )

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """Chunk each node's text and build one ``TextNode`` per chunk."""
        chunker = TextChunker(self.config)
        parsed: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            chunks = chunker.chunk(node.get_content(metadata_mode=MetadataMode.NONE))
            children = build_nodes_from_splits(
                [chunk.content for chunk in chunks], node, id_func=self.id_func
            )
            for chunk, child in zip(chunks, children, strict=True):
                child.start_char_idx = chunk.start_offset
                child.end_char_idx = chunk.end_offset
                child.metadata[CHUNK_INDEX_KEY] = chunk.index
                # The position is bookkeeping, not content: keep it out of embedded and
                # prompted text. New lists, so the source node's lists stay untouched.
                child.excluded_embed_metadata_keys = [
                    *node.excluded_embed_metadata_keys,
                    CHUNK_INDEX_KEY,
                ]
                child.excluded_llm_metadata_keys = [
                    *node.excluded_llm_metadata_keys,
                    CHUNK_INDEX_KEY,
                ]
            parsed.extend(children)
        return parsed

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        """Inherit metadata and relationships as LlamaIndex does, keeping the exact offsets."""
        # The base class re-derives offsets with str.find from the previous chunk's start,
        # which lands on an earlier repeat of the same text; ours are already exact.
        spans = [
            (node.start_char_idx, node.end_char_idx) if isinstance(node, TextNode) else None
            for node in nodes
        ]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node, span in zip(nodes, spans, strict=True):
            if isinstance(node, TextNode) and span is not None:
                node.start_char_idx, node.end_char_idx = span
        return nodes
