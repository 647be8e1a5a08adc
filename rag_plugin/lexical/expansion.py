"""Lexical query expansion: stopwords, compound splitting and a synonym table (SPEC L5).

The chatbot seed's ``extract_lexical_tokens``, for the BM25 and fuzzy legs of a search:

1. Lowercase ``[\\wäöüÄÖÜß]+`` tokens of at least 3 characters that are not stopwords; if
   none remain, tokens of at least 2 characters that are not stopwords.
2. For each token, in order: the token; for German, ``team`` when the token contains it
   (and is not ``team`` itself), and for each compound suffix (``mitglieder``,
   ``mitarbeiter``, ``mitarbeitende``, ``ansprechpartner``, ``leitung``, ``kontakt``) that
   the token ends with while being more than two characters longer, the prefix (when it has at
   least 3 characters) and then the suffix; then the token's synonyms.
3. Duplicates are dropped in order and the first ``max_terms`` (10) are kept.

Where we do better than the seed: the seed ANDed the expanded terms in its full-text index,
so a synonym could only narrow a search; :meth:`QueryExpander.expanded_query` joins them with
spaces for BM25, which sums per-term scores, so every term widens it (OR semantics). The seed's
synonym table was hard-coded; here it is data (the portal keeps one per tenant). English has
its own stopwords and no compound splitting, whose suffixes are German words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from rag_plugin.exceptions import InvalidInputError

__all__ = [
    "COMPOUND_SUFFIXES",
    "DEFAULT_MAX_TERMS",
    "ENGLISH_STOPWORDS",
    "EXPANSION_LANGUAGES",
    "GERMAN_STOPWORDS",
    "QueryExpander",
    "normalize_synonyms",
]

DEFAULT_MAX_TERMS: Final = 10
COMPOUND_SUFFIXES: Final = (
    "mitglieder",
    "mitarbeiter",
    "mitarbeitende",
    "ansprechpartner",
    "leitung",
    "kontakt",
)
_TEAM = "team"
_TOKEN = re.compile(r"[\wäöüÄÖÜß]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


GERMAN_STOPWORDS: Final = _words(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes auch auf aus bei bin bis bist da damit dann das dass dein deine dem den denn der des
    dich die dies diese diesem diesen dieser dieses dir doch dort du durch ein eine einem einen
    einer eines er es etwas euch euer für gegen gibt hab habe haben hat hatte hier hin ich ihm
    ihn ihnen ihr ihre im in ist ja jede jedem jeden jeder jedes jetzt kann kein keine können
    man mein meine mich mir mit muss nach nicht nichts noch nun nur ob oder ohne sehr sein seine
    sich sie sind so soll über um und uns unser unter vom von vor war waren was weil welche
    welchem welchen welcher welches wenn wer werden wie wieder will wir wird wo wurde zu zum zur
    zwar zwischen
    """
)
"""German function words; the seed had about 130, not all recorded, so this list is ours."""

ENGLISH_STOPWORDS: Final = _words(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """
)
"""English stopwords (the usual function words)."""

_STOPWORDS: Final = MappingProxyType({"german": GERMAN_STOPWORDS, "english": ENGLISH_STOPWORDS})
_LANGUAGE_ALIASES: Final = MappingProxyType(
    {"german": "german", "de": "german", "deutsch": "german", "english": "english", "en": "english"}
)
EXPANSION_LANGUAGES: Final = tuple(_STOPWORDS)
"""The languages :class:`QueryExpander` knows (aliases: ``de``, ``deutsch``, ``en``)."""


def normalize_synonyms(synonyms: Mapping[str, Sequence[str]]) -> Mapping[str, tuple[str, ...]]:
    """A read-only copy of a synonym table with lowercased, stripped, de-duplicated entries.

    Keys are single words (what the tokenizer yields); values are words or phrases. Raises
    :class:`InvalidInputError` naming the offending entry.
    """
    if not isinstance(synonyms, Mapping):
        raise InvalidInputError(
            f"synonyms must be a mapping of a word to a list of words, got {type(synonyms)!r}."
        )
    table: dict[str, tuple[str, ...]] = {}
    for key, values in synonyms.items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidInputError(f"A synonym key must be a non-empty word, got {key!r}.")
        word = key.strip().lower()
        if _TOKEN.fullmatch(word) is None:
            raise InvalidInputError(
                f"The synonym key {key!r} must be one word (letters, digits or _), since the "
                "query is matched word by word."
            )
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise InvalidInputError(
                f"The synonyms of {key!r} must be a list of words, got {values!r}."
            )
        cleaned: list[str] = list(table.get(word, ()))
        for value in values:
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(
                    f"The synonyms of {key!r} must be non-empty words, got {value!r}."
                )
            term = " ".join(value.lower().split())
            if term != word and term not in cleaned:
                cleaned.append(term)
        table[word] = tuple(cleaned)
    return MappingProxyType(table)


class QueryExpander:
    """Turns a question into the terms the lexical legs should look for (SPEC L5)."""

    def __init__(
        self,
        language: str = "english",
        synonyms: Mapping[str, Sequence[str]] | None = None,
        max_terms: int = DEFAULT_MAX_TERMS,
    ) -> None:
        key = language.strip().lower() if isinstance(language, str) else ""
        if key not in _LANGUAGE_ALIASES:
            raise InvalidInputError(
                f"Unknown query expansion language {language!r}; use one of: "
                f"{', '.join(EXPANSION_LANGUAGES)}."
            )
        if isinstance(max_terms, bool) or not isinstance(max_terms, int) or max_terms < 1:
            raise InvalidInputError(f"max_terms must be a positive integer, got {max_terms!r}.")
        self.language = _LANGUAGE_ALIASES[key]
        self.stopwords = _STOPWORDS[self.language]
        self.synonyms = normalize_synonyms(synonyms or {})
        self.max_terms = max_terms

    def tokens(self, query: str) -> list[str]:
        """The query's content words: ≥ 3 characters without stopwords, else ≥ 2."""
        words = _TOKEN.findall(query.lower())
        for minimum in (3, 2):
            kept = [w for w in words if len(w) >= minimum and w not in self.stopwords]
            if kept:
                return kept
        return []

    def expand(self, query: str) -> list[str]:
        """The query's terms with compound parts and synonyms, de-duplicated, at most
        ``max_terms``."""
        terms: list[str] = []
        for token in self.tokens(query):
            terms.append(token)
            if self.language == "german":
                terms.extend(_compound_parts(token))
            terms.extend(self.synonyms.get(token, ()))
        return list(dict.fromkeys(terms))[: self.max_terms]

    def expanded_query(self, query: str) -> str:
        """The expanded terms joined by spaces (for BM25/fuzzy; empty when none remain)."""
        return " ".join(self.expand(query))


def _compound_parts(token: str) -> list[str]:
    parts: list[str] = []
    if _TEAM in token and token != _TEAM:
        parts.append(_TEAM)
    for suffix in COMPOUND_SUFFIXES:
        if token.endswith(suffix) and len(token) > len(suffix) + 2:
            prefix = token[: -len(suffix)]
            if len(prefix) >= 3:
                parts.append(prefix)
            parts.append(suffix)
    return parts
