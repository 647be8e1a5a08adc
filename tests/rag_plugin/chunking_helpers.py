"""Texts and names shared by the tests of rag_plugin.chunking (test_chunking_*.py: SPEC C1-C6,
seed behaviour A1 and the ARES tests in A6).

Where SPEC deliberately differs from the seed, the expected values in those tests are the
SPEC's, written by hand, and each deviation is named next to the case:
- offsets are exact character offsets into the original text (seed word mode drifts);
- word and character windows stop at the first window that reaches the end of the text
  (the seed keeps emitting shrinking tail windows);
- ``min_chunk_size`` counts characters (the seed counts UTF-8 bytes);
- indices are compacted after filtering in every mode (the seed leaves gaps in semantic mode);
- ``chunk_size`` 0 is an error (the seed emits empty windows).
"""

from __future__ import annotations

from rag_plugin.chunking import ChunkingStrategy

WORD = ChunkingStrategy.WORD
SEMANTIC = ChunkingStrategy.SEMANTIC
CHARACTER = ChunkingStrategy.CHARACTER

TEN_WORDS = "one two three four five six seven eight nine ten"
NATO = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
EMOJI_TEXT = "Hello 🌍 world — 你好"
