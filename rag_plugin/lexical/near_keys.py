"""Deletion keys (SymSpell's): the strings that find every word within two edits of another.

Why they are exact: two strings ``a``, ``b`` within ``k`` edits (Levenshtein) have a common
subsequence ``s`` that each reaches by deleting at most ``k`` characters (a substitution is a
deletion on both sides, an insertion a deletion on the other side). Cut both to their first
``p`` characters, and let ``m_a``, ``m_b`` count the characters of ``s`` inside each cut. The
first ``min(m_a, m_b)`` characters of ``s`` are a subsequence of both cuts; ``a``'s cut
reaches it by deleting its characters outside ``s`` (at most ``k``) when ``m_a <= m_b``, and
otherwise by deleting at most ``p - m_b`` characters — ``b``'s cut is then ``p`` characters
long, and ``p - m_b`` are its own characters outside ``s``, again at most ``k``. So the
entries whose keys meet one of the query word's keys (:func:`entry_keys` of both) are a
superset of its close entries; rapidfuzz keeps the close ones. Keys are characters (code
points).

A prefix of ten characters has 56 keys. Words that share their first ten characters share
keys, which is what lets a long query word's close entries come from as few lookups as a
short one's. The PostgreSQL store keeps these keys in a table, the Qdrant store as a keyword
payload of each vocabulary point.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "PREFIX", "deletion_keys", "entry_keys"]

MAX_DEPTH = 2
"""Characters deleted at most: the fuzzy leg's and correction's maximum distance."""

PREFIX = 10
"""Characters of an entry (and of a query word) whose deletion keys are indexed (looked up).

Migration 11 of the PostgreSQL store indexed the entries of at most ten characters whole;
migration 12 added the longer ones under their first ten, so the keys of the entries already
indexed did not change."""


def deletion_keys(word: str, depth: int = MAX_DEPTH) -> set[str]:
    """Every string made from ``word`` by deleting at most ``depth`` characters."""
    keys = {word}
    frontier = {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        keys |= frontier
    return keys


def entry_keys(word: str, depth: int = MAX_DEPTH) -> set[str]:
    """The keys an entry is indexed under, and a query word looked up by: the deletion keys of
    its first :data:`PREFIX` characters."""
    return deletion_keys(word[:PREFIX], depth)
