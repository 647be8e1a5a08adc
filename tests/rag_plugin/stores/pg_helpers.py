"""Test helpers for the PostgreSQL store: recount the lexical state from the chunks' text."""

from __future__ import annotations

from collections import Counter

import psycopg
from psycopg import sql

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.stores.postgres.words import chunk_words


def statistics_mismatches(
    dsn: str, schema: str, collection: str, owner: str | None = None
) -> list[str]:
    """Compare every stored count of a collection with a from-scratch recount of its chunks.

    Recounts N, Σdl and the document count from the rows, and each chunk's postings and every
    term's df by tokenising the chunk texts again. Returns one line per difference.
    """

    def table(name: str) -> sql.Identifier:
        return sql.Identifier(schema, f"rag_{name}")

    with psycopg.connect(dsn) as conn:
        # One snapshot for every count, whatever other sessions commit meanwhile.
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        found = conn.execute(
            sql.SQL(
                "SELECT id, analyzer, document_count, chunk_count, token_count FROM {}"
                " WHERE name = %s AND owner IS NOT DISTINCT FROM %s"
            ).format(table("collections")),
            (collection, owner),
        ).fetchone()
        if found is None:
            return [f"collection {collection!r} does not exist"]
        collection_id, analyzer_name, documents, chunks, tokens = found
        analyzer = get_analyzer(analyzer_name)
        rows = conn.execute(
            sql.SQL("SELECT id, content, token_count FROM {} WHERE collection_id = %s").format(
                table("chunks")
            ),
            (collection_id,),
        ).fetchall()
        postings = conn.execute(
            sql.SQL("SELECT chunk_id, term, tf, dl FROM {} WHERE collection_id = %s").format(
                table("postings")
            ),
            (collection_id,),
        ).fetchall()
        vocabulary: dict[str, int] = dict(
            conn.execute(
                sql.SQL("SELECT term, df FROM {} WHERE collection_id = %s").format(
                    table("vocabulary")
                ),
                (collection_id,),
            ).fetchall()
        )
        word_rows = conn.execute(
            sql.SQL("SELECT chunk_id, word FROM {} WHERE collection_id = %s").format(
                table("words")
            ),
            (collection_id,),
        ).fetchall()
        word_df: dict[str, int] = dict(
            conn.execute(
                sql.SQL("SELECT word, df FROM {} WHERE collection_id = %s").format(
                    table("word_vocabulary")
                ),
                (collection_id,),
            ).fetchall()
        )
        document_rows = conn.execute(
            sql.SQL(
                "SELECT count(*), coalesce(sum(chunk_count), 0) FROM {} WHERE collection_id = %s"
            ).format(table("documents")),
            (collection_id,),
        ).fetchone()
    problems: list[str] = []
    expected_postings: set[tuple[int, str, int, int]] = set()
    df: Counter[str] = Counter()
    total = 0
    for chunk_id, content, stored_length in rows:
        terms = analyzer.tokens(content)
        total += len(terms)
        if stored_length != len(terms):
            problems.append(f"chunk {chunk_id}: dl {stored_length} != {len(terms)}")
        for term, tf in Counter(terms).items():
            expected_postings.add((chunk_id, term, tf, len(terms)))
        df.update(set(terms))
    if set(postings) != expected_postings or len(postings) != len(expected_postings):
        problems.append(
            f"postings differ: {len(set(postings) - expected_postings)} extra, "
            f"{len(expected_postings - set(postings))} missing"
        )
    if vocabulary != dict(df):
        diff = {t for t in set(vocabulary) | set(df) if vocabulary.get(t) != df.get(t)}
        problems.append(f"df differs for {len(diff)} terms, e.g. {sorted(diff)[:5]}")
    expected_words = {
        (chunk_id, word) for chunk_id, content, _ in rows for word in chunk_words(content)
    }
    if sorted(word_rows) != sorted(expected_words):
        problems.append(f"word postings differ: {len(set(word_rows) ^ expected_words)} rows")
    if word_df != dict(Counter(word for _, word in expected_words)):
        problems.append("word df differs")
    if (chunks, tokens) != (len(rows), total):
        problems.append(f"N, sum(dl) stored {(chunks, tokens)} != recounted {(len(rows), total)}")
    if document_rows is None or (documents, chunks) != tuple(document_rows):
        problems.append(f"documents/chunks stored {(documents, chunks)} != rows {document_rows}")
    return problems
