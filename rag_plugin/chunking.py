"""Split text into chunks whose offsets point exactly back into the original text."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from semantic_text_splitter import TextSplitter

from rag_plugin.exceptions import InvalidInputError

_WORD = re.compile(r"\S+")


class ChunkingStrategy(StrEnum):
    """How text is cut into chunks; the value is the name used in configuration and the API."""

    WORD = "word"
    SEMANTIC = "semantic"
    CHARACTER = "character"

    @classmethod
    def parse(cls, name: str) -> ChunkingStrategy:
        """Parse a strategy name case-insensitively, accepting the seed system's aliases."""
        key = name.strip().lower() if isinstance(name, str) else None
        strategy = _STRATEGY_ALIASES.get(key) if key is not None else None
        if strategy is None:
            valid = ", ".join(member.value for member in cls)
            raise InvalidInputError(f"Unknown chunking strategy: {name}. Use: {valid}")
        return strategy

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every name :meth:`parse` knows (in lower case): the values and the seed's aliases."""
        return tuple(_STRATEGY_ALIASES)


_STRATEGY_ALIASES: Mapping[str, ChunkingStrategy] = MappingProxyType(
    {
        **{member.value: member for member in ChunkingStrategy},
        "words": ChunkingStrategy.WORD,
        "sentence": ChunkingStrategy.SEMANTIC,
        "paragraph": ChunkingStrategy.SEMANTIC,
        "char": ChunkingStrategy.CHARACTER,
        "chars": ChunkingStrategy.CHARACTER,
    }
)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a text: ``text[start_offset:end_offset] == content`` (character offsets)."""

    index: int
    content: str
    start_offset: int
    end_offset: int


def _require_int(name: str, value: object, minimum: int) -> None:
    """Raise unless ``value`` is an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise InvalidInputError(f"{name} must be {kind}, got {value!r}.")


@dataclass(frozen=True, slots=True)
class ChunkerConfig:
    """How a :class:`TextChunker` cuts text; sizes are words (word mode) or characters.

    ``min_chunk_size`` is always in characters. An overlap of ``chunk_size`` or more is
    allowed, as in the seed system: windows then advance by one unit.
    """

    strategy: ChunkingStrategy = ChunkingStrategy.WORD
    chunk_size: int = 512
    chunk_overlap: int = 50
    min_chunk_size: int = 20

    def __post_init__(self) -> None:
        # Strings are accepted (and aliases resolved) so configuration read from JSON or
        # an API request needs no separate parsing step.
        object.__setattr__(self, "strategy", ChunkingStrategy.parse(self.strategy))
        _require_int("chunk_size", self.chunk_size, 1)
        _require_int("chunk_overlap", self.chunk_overlap, 0)
        _require_int("min_chunk_size", self.min_chunk_size, 0)

    @property
    def step(self) -> int:
        """How far consecutive word or character windows advance."""
        return max(self.chunk_size - self.chunk_overlap, 1)

    @classmethod
    def for_word(cls, chunk_size: int, chunk_overlap: int) -> ChunkerConfig:
        """Windows of ``chunk_size`` words overlapping by ``chunk_overlap`` words."""
        return cls(ChunkingStrategy.WORD, chunk_size, chunk_overlap, 20)

    @classmethod
    def for_semantic(cls, max_chars: int) -> ChunkerConfig:
        """Sentence- and paragraph-aware chunks of at most ``max_chars`` characters."""
        return cls(ChunkingStrategy.SEMANTIC, max_chars, 0, 20)

    @classmethod
    def for_character(cls, chunk_size: int, chunk_overlap: int) -> ChunkerConfig:
        """Windows of ``chunk_size`` characters overlapping by ``chunk_overlap`` characters."""
        return cls(ChunkingStrategy.CHARACTER, chunk_size, chunk_overlap, 20)


# The API's ingest endpoint ignores caller sizes and always uses these (SPEC C6).
API_CHUNKERS: Mapping[ChunkingStrategy, ChunkerConfig] = MappingProxyType(
    {
        ChunkingStrategy.WORD: ChunkerConfig.for_word(200, 50),
        ChunkingStrategy.SEMANTIC: ChunkerConfig.for_semantic(500),
        ChunkingStrategy.CHARACTER: ChunkerConfig.for_character(500, 100),
    }
)


def api_chunker_config(strategy: ChunkingStrategy | str | None = None) -> ChunkerConfig:
    """The fixed ingest configuration for ``strategy`` (a name or alias; ``None`` means word)."""
    if strategy is None:
        return API_CHUNKERS[ChunkingStrategy.WORD]
    return API_CHUNKERS[ChunkingStrategy.parse(strategy)]


class TextChunker:
    """Cuts text into :class:`Chunk` objects according to a :class:`ChunkerConfig`."""

    def __init__(self, config: ChunkerConfig | None = None) -> None:
        self._config = config if config is not None else ChunkerConfig()
        self._splitter = (
            TextSplitter(self._config.chunk_size)
            if self._config.strategy is ChunkingStrategy.SEMANTIC
            else None
        )

    @property
    def config(self) -> ChunkerConfig:
        """The configuration this chunker was built with."""
        return self._config

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks of ``text`` in order, indexed 0, 1, 2, ... after short ones are dropped."""
        if not isinstance(text, str):
            raise InvalidInputError(f"Text to chunk must be a str, got {type(text).__name__}.")
        if not text.strip():
            return []
        chunks: list[Chunk] = []
        for start, end in self._spans(text):
            content = text[start:end]
            # Whitespace-only windows (possible in character mode) carry nothing to retrieve.
            if len(content) < self._config.min_chunk_size or content.isspace():
                continue
            chunks.append(Chunk(len(chunks), content, start, end))
        return chunks

    def _spans(self, text: str) -> Iterator[tuple[int, int]]:
        """``(start, end)`` character spans of the candidate chunks, before filtering."""
        if self._splitter is not None:
            return _semantic_spans(self._splitter, text)
        if self._config.strategy is ChunkingStrategy.WORD:
            return _word_spans(text, self._config.chunk_size, self._config.step)
        return _character_spans(text, self._config.chunk_size, self._config.step)


def _word_spans(text: str, size: int, step: int) -> Iterator[tuple[int, int]]:
    """Windows of whitespace-separated words, from the first word's start to the last's end."""
    words = [match.span() for match in _WORD.finditer(text)]
    for first in range(0, len(words), step):
        last = min(first + size, len(words)) - 1
        yield words[first][0], words[last][1]
        # Later windows would only repeat a tail of this one.
        if last == len(words) - 1:
            return


def _character_spans(text: str, size: int, step: int) -> Iterator[tuple[int, int]]:
    """Windows of ``size`` characters; the last one is the first to reach the end of the text."""
    for start in range(0, len(text), step):
        end = min(start + size, len(text))
        yield start, end
        if end == len(text):
            return


def _semantic_spans(splitter: TextSplitter, text: str) -> Iterator[tuple[int, int]]:
    """Sentence- and paragraph-aware spans from ``semantic-text-splitter``."""
    # chunk_indices gives character (not byte) offsets of trimmed chunks, so
    # text[start:start + len(chunk)] == chunk holds for CJK and emoji too.
    for start, content in splitter.chunk_indices(text):
        yield start, start + len(content)
