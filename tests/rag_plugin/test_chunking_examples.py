"""The chunks each strategy cuts: worked examples (SPEC C2-C5, seed A1) and ARES's tests (A6)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from rag_plugin.chunking import Chunk, ChunkerConfig, ChunkingStrategy, TextChunker
from rag_plugin.exceptions import InvalidInputError
from tests.rag_plugin.chunking_helpers import (
    ALPHABET,
    CHARACTER,
    EMOJI_TEXT,
    NATO,
    SEMANTIC,
    TEN_WORDS,
    WORD,
)


def tuples(config: ChunkerConfig, text: str) -> list[tuple[int, str, int, int]]:
    """The chunks of ``text`` as (index, content, start, end) tuples."""
    return [
        (c.index, c.content, c.start_offset, c.end_offset) for c in TextChunker(config).chunk(text)
    ]


# --- C2-C5: worked examples (reference A1), adapted to SPEC -------------------------------


WORKED_EXAMPLES = [
    pytest.param(
        ChunkerConfig(WORD, 5, 2, 20),
        TEN_WORDS,
        [
            (0, "one two three four five", 0, 23),
            (1, "four five six seven eight", 14, 39),
            (2, "seven eight nine ten", 28, 48),
        ],
        id="word-5-2-ten-words",  # same as the seed; the seed's dropped "ten" window is gone
    ),
    pytest.param(
        ChunkerConfig(WORD, 4, 2, 5),
        NATO,
        [
            (0, "alpha bravo charlie delta", 0, 25),
            (1, "charlie delta echo foxtrot", 12, 38),
            (2, "echo foxtrot golf hotel", 26, 49),
            (3, "golf hotel india juliet", 39, 62),
        ],
        id="word-4-2-nato",  # seed adds the tail "india juliet" (50, 62); SPEC stops earlier
    ),
    pytest.param(
        ChunkerConfig(WORD, 3, 10, 1),
        "a b c d e f",
        [(0, "a b c", 0, 5), (1, "b c d", 2, 7), (2, "c d e", 4, 9), (3, "d e f", 6, 11)],
        id="word-overlap-ge-size",  # seed: 6 chunks, adding tails "e f" and "f"
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 12, 4, 4),
        ALPHABET,
        [(0, "abcdefghijkl", 0, 12), (1, "ijklmnopqrst", 8, 20), (2, "qrstuvwxyz", 16, 26)],
        id="char-12-4-alphabet",
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 20, 5, 10),
        "This is a test string that should be chunked by characters.",
        [
            (0, "This is a test strin", 0, 20),
            (1, "string that should b", 15, 35),
            (2, "uld be chunked by ch", 30, 50),
            (3, "by characters.", 45, 59),
        ],
        id="char-20-5-sentence",
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 10, 2, 5),
        EMOJI_TEXT,
        [(0, "Hello 🌍 wo", 0, 10), (1, "world — 你好", 8, 18)],
        id="char-10-2-emoji",  # seed adds tail "你好" (6 bytes >= 5); SPEC: no tail, 2 chars < 5
    ),
    pytest.param(ChunkerConfig.for_character(8, 2), "0123456789abcdef", [], id="char-8-2-min-20"),
    pytest.param(
        ChunkerConfig(WORD, 100, 10, 5), "Short text", [(0, "Short text", 0, 10)], id="small-text"
    ),
    pytest.param(ChunkerConfig(WORD, 2, 0, 50), "hi there", [], id="min-filters-short"),
    pytest.param(
        ChunkerConfig.for_semantic(50),
        "Hello world. This is a test.",
        [(0, "Hello world. This is a test.", 0, 28)],
        id="semantic-chunk-metadata",
    ),
    pytest.param(
        ChunkerConfig(SEMANTIC, 100, 0, 20),
        "The first sentence is about cats. The second sentence is about dogs and their owners. "
        "The third sentence is about birds.",
        [
            (
                0,
                "The first sentence is about cats. "
                "The second sentence is about dogs and their owners.",
                0,
                85,
            ),
            (1, "The third sentence is about birds.", 86, 120),
        ],
        id="semantic-three-sentences",
    ),
    pytest.param(
        ChunkerConfig(SEMANTIC, 40, 0, 1),
        "Para one line.\n\nPara two is here.\n\n\nPara three, a bit longer than the others are.",
        [
            (0, "Para one line.\n\nPara two is here.", 0, 33),
            (1, "Para three, a bit longer than the others", 36, 76),
            (2, "are.", 77, 81),
        ],
        id="semantic-paragraphs",
    ),
    pytest.param(
        # "Ok." (28..31) is below min 10; the seed would number the kept chunks 0 and 2.
        ChunkerConfig(SEMANTIC, 30, 0, 10),
        "First sentence is here now. Ok. Then another long sentence.",
        [(0, "First sentence is here now.", 0, 27), (1, "Then another long sentence.", 32, 59)],
        id="semantic-indices-compacted",
    ),
    pytest.param(
        # Irregular spacing survives inside word chunks because content is a slice of the text.
        ChunkerConfig(WORD, 2, 1, 1),
        "  tab\tseparated\n\nnew   lines  ",
        [(0, "tab\tseparated", 2, 15), (1, "separated\n\nnew", 6, 20), (2, "new   lines", 17, 28)],
        id="word-irregular-whitespace",
    ),
    pytest.param(
        # Whitespace-only character windows are dropped; the others are still numbered 0, 1.
        ChunkerConfig(CHARACTER, 4, 0, 1),
        "abcd        efgh",
        [(0, "abcd", 0, 4), (1, "efgh", 12, 16)],
        id="char-whitespace-window-dropped",
    ),
]


@pytest.mark.parametrize(("config", "text", "expected"), WORKED_EXAMPLES)
def test_worked_examples(
    config: ChunkerConfig, text: str, expected: list[tuple[int, str, int, int]]
) -> None:
    assert tuples(config, text) == expected


# --- ARES unit tests (A6), adapted ---------------------------------------------------------


def test_word_chunks_hold_at_most_chunk_size_words() -> None:
    text = "the quick brown fox jumps over lazy"
    chunks = TextChunker(ChunkerConfig(WORD, 3, 0, 1)).chunk(text)
    assert [c.content for c in chunks] == ["the quick brown", "fox jumps over", "lazy"]


def test_word_overlap_shares_words_between_neighbours() -> None:
    chunks = TextChunker(ChunkerConfig(WORD, 4, 2, 5)).chunk(NATO)
    assert len(chunks) == 4
    for previous, current in itertools.pairwise(chunks):
        assert previous.content.split()[-2:] == current.content.split()[:2]


def test_overlap_equal_to_size_advances_one_word_at_a_time() -> None:
    chunks = TextChunker(ChunkerConfig(WORD, 3, 3, 1)).chunk("a b c d e f")
    assert [c.start_offset for c in chunks] == [0, 2, 4, 6]


def test_character_overlap_shares_characters() -> None:
    chunks = TextChunker(ChunkerConfig(CHARACTER, 12, 4, 4)).chunk(ALPHABET)
    assert len(chunks) == 3
    for previous, current in itertools.pairwise(chunks):
        assert current.content.startswith(previous.content[-4:])


def test_very_long_document_word_chunking() -> None:
    # 10,000 words, step 40: windows start at 0, 40, ..., 9960; the one at 9960 is the first
    # to reach the last word, so it holds words 9960..9999 (40 words) and nothing follows.
    chunks = TextChunker(ChunkerConfig(WORD, 50, 10, 20)).chunk("word " * 10_000)
    assert len(chunks) == 250
    assert [len(c.content.split()) for c in chunks] == [50] * 249 + [40]
    assert (chunks[-1].index, chunks[-1].start_offset, chunks[-1].end_offset) == (249, 49800, 49999)


def test_semantic_chunking_filters_below_min_size() -> None:
    config = ChunkerConfig(SEMANTIC, 100, 0, 10_000)
    assert TextChunker(config).chunk("Hello world. This is a test of semantic chunks.") == []


def test_min_chunk_size_counts_characters_not_bytes() -> None:
    # "你好世界" is 4 characters but 12 UTF-8 bytes; the seed would keep it with min 5.
    assert tuples(ChunkerConfig(WORD, 10, 0, 5), "你好世界") == []
    assert tuples(ChunkerConfig(WORD, 10, 0, 4), "你好世界") == [(0, "你好世界", 0, 4)]


def test_emoji_survives_character_chunking() -> None:
    chunks = TextChunker(ChunkerConfig(CHARACTER, 10, 2, 5)).chunk(EMOJI_TEXT)
    assert "🌍" in "".join(c.content for c in chunks)


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
@pytest.mark.parametrize("text", ["", " ", "   \t\n  \r\n", "\u3000\u00a0"])
def test_empty_or_whitespace_text_gives_no_chunks(strategy: ChunkingStrategy, text: str) -> None:
    assert TextChunker(ChunkerConfig(strategy, 10, 2, 0)).chunk(text) == []


def test_chunk_rejects_non_string_text() -> None:
    with pytest.raises(InvalidInputError, match="must be a str, got bytes"):
        TextChunker().chunk(b"bytes")  # type: ignore[arg-type]


def test_chunk_is_immutable() -> None:
    chunk = Chunk(0, "abc", 0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunk.index = 1  # type: ignore[misc]
