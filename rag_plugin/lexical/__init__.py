"""Lexical search: analyzers, BM25 and fuzzy (Levenshtein) matching."""
