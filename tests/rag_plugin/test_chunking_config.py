"""Chunking strategy names (SPEC C1) and ChunkerConfig's defaults and validation (SPEC C6)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from rag_plugin.chunking import (
    API_CHUNKERS,
    ChunkerConfig,
    ChunkingStrategy,
    TextChunker,
    api_chunker_config,
)
from rag_plugin.exceptions import InvalidInputError
from tests.rag_plugin.chunking_helpers import CHARACTER, SEMANTIC, WORD

# --- C1: strategy names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("word", WORD),
        ("semantic", SEMANTIC),
        ("character", CHARACTER),
        ("words", WORD),
        ("sentence", SEMANTIC),
        ("paragraph", SEMANTIC),
        ("char", CHARACTER),
        ("chars", CHARACTER),
        ("SEMANTIC", SEMANTIC),
        ("Chars", CHARACTER),
        (" Word ", WORD),
    ],
)
def test_parse_accepts_names_aliases_and_any_case(name: str, expected: ChunkingStrategy) -> None:
    assert ChunkingStrategy.parse(name) is expected


@pytest.mark.parametrize("name", ["token-based", "Token-Based", "", "wordy"])
def test_parse_unknown_name_names_input_and_valid_set(name: str) -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        ChunkingStrategy.parse(name)
    assert str(excinfo.value) == (
        f"Unknown chunking strategy: {name}. Use: word, semantic, character"
    )


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
def test_strategy_str_round_trips_through_parse(strategy: ChunkingStrategy) -> None:
    assert ChunkingStrategy.parse(str(strategy)) is strategy


def test_strategy_str_is_the_value() -> None:
    assert [str(s) for s in ChunkingStrategy] == ["word", "semantic", "character"]


# --- C6: configuration ----------------------------------------------------------------------


def test_default_config() -> None:
    assert ChunkerConfig() == ChunkerConfig(WORD, 512, 50, 20)


def test_config_with_only_chunk_size_keeps_other_defaults() -> None:
    # Seed test_chunker_config_serde_defaults: {"chunk_size": 64} -> Word, 64, 50, 20.
    assert dataclasses.astuple(ChunkerConfig(chunk_size=64)) == (WORD, 64, 50, 20)


def test_config_accepts_strategy_names() -> None:
    assert ChunkerConfig(strategy="chars").strategy is CHARACTER  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        (lambda: ChunkerConfig.for_word(200, 50), (WORD, 200, 50, 20)),
        (lambda: ChunkerConfig.for_semantic(500), (SEMANTIC, 500, 0, 20)),
        (lambda: ChunkerConfig.for_character(500, 100), (CHARACTER, 500, 100, 20)),
    ],
)
def test_constructors_set_min_20(
    factory: Callable[[], ChunkerConfig], expected: tuple[object, ...]
) -> None:
    assert dataclasses.astuple(factory()) == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (None, (WORD, 200, 50, 20)),
        ("word", (WORD, 200, 50, 20)),
        ("paragraph", (SEMANTIC, 500, 0, 20)),
        (CHARACTER, (CHARACTER, 500, 100, 20)),
    ],
)
def test_api_chunker_config_uses_fixed_sizes(
    strategy: ChunkingStrategy | str | None, expected: tuple[object, ...]
) -> None:
    assert dataclasses.astuple(api_chunker_config(strategy)) == expected


def test_api_chunkers_cover_every_strategy() -> None:
    assert set(API_CHUNKERS) == set(ChunkingStrategy)


def test_api_chunker_config_rejects_unknown_strategy() -> None:
    with pytest.raises(InvalidInputError, match=r"^Unknown chunking strategy: tokens\. Use: "):
        api_chunker_config("tokens")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "chunk_size must be a positive integer, got 0."),
        ({"chunk_size": -5}, "chunk_size must be a positive integer, got -5."),
        ({"chunk_size": 2.5}, "chunk_size must be a positive integer, got 2.5."),
        ({"chunk_size": True}, "chunk_size must be a positive integer, got True."),
        ({"chunk_overlap": -1}, "chunk_overlap must be a non-negative integer, got -1."),
        ({"chunk_overlap": "5"}, "chunk_overlap must be a non-negative integer, got '5'."),
        ({"min_chunk_size": -20}, "min_chunk_size must be a non-negative integer, got -20."),
        (
            {"strategy": "token"},
            "Unknown chunking strategy: token. Use: word, semantic, character",
        ),
    ],
)
def test_config_rejects_invalid_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        ChunkerConfig(**kwargs)  # type: ignore[arg-type]
    assert str(excinfo.value) == message


def test_zero_chunk_size_is_an_error_not_empty_chunks() -> None:
    # Seed test_zero_chunk_size_produces_no_word_chunks: SPEC C6 makes size 0 an error.
    with pytest.raises(InvalidInputError, match="chunk_size"):
        ChunkerConfig.for_word(0, 0)


@pytest.mark.parametrize(("size", "overlap", "step"), [(5, 2, 3), (3, 3, 1), (3, 10, 1)])
def test_overlap_ge_size_is_allowed_with_step_one(size: int, overlap: int, step: int) -> None:
    assert ChunkerConfig(WORD, size, overlap, 1).step == step


def test_config_is_immutable() -> None:
    config = ChunkerConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.chunk_size = 10  # type: ignore[misc]


def test_text_chunker_exposes_its_config() -> None:
    config = ChunkerConfig.for_character(30, 3)
    assert TextChunker(config).config is config
    assert TextChunker().config == ChunkerConfig()
