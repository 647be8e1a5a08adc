"""The fuzzy leg's words: each chunk's distinct scoring words and each word's df.

:func:`~rag_plugin.lexical.fuzzy.fuzzy_score` compares query words with a chunk's lowercased
whitespace words of 2 bytes or more, not with analyzer tokens, so the store keeps those words
in the word blocks (word → chunks, ``blocks.py``), the forward index (chunk → words) and
``rag_word_vocabulary`` (word → df), written in the same transaction as the chunks. The words
are computed here, in Python, because SQL's ``lower()`` under the "C" collation and its notion
of whitespace differ from Python's. (``rag_words``, one row per word posting, was the store's
layout from migration 4 to 9; :func:`backfill_words` is migration 4's step.)
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.stores.prepared import chunk_words

__all__ = ["backfill_words", "chunk_words"]

_BATCH = 5000


def backfill_words(conn: psycopg.Connection[Any], schema: str) -> None:
    """Migration step: fill ``rag_words`` from every existing chunk's text."""
    chunks = sql.Identifier(schema, "rag_chunks")
    target = sql.SQL("COPY {} (collection_id, word, chunk_id) FROM STDIN").format(
        sql.Identifier(schema, "rag_words")
    )
    # A server-side cursor streams the texts in batches; each batch is copied before the next
    # is fetched (one connection cannot interleave a COPY with a fetch).
    with conn.cursor(name="rag_backfill_words") as source:
        source.itersize = _BATCH
        source.execute(sql.SQL("SELECT id, collection_id, content FROM {}").format(chunks))
        while batch := source.fetchmany(_BATCH):
            with conn.cursor().copy(target) as copy:
                for chunk_id, collection_id, content in batch:
                    for word in chunk_words(content):
                        copy.write_row((collection_id, word, chunk_id))
