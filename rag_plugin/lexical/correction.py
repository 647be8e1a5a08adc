"""Typo-correcting a query against a collection's vocabulary, in words a user can read (L3, L6).

Both stores correct through :func:`correct_with`; they differ only in how they find close
vocabulary terms and the collection words under some prefixes, so they give the same answers.

With the seed analyzer a term is a word: each query token is replaced by its closest term.
A stemming analyzer's terms are stems ("frequenc"), so the corrected query is built from the
user's own lowercased seed tokens instead: a token whose term is in the vocabulary, a stopword
or a token with no close term stays as typed, and a misspelled one is replaced by the
*surface form* of the closest term that is nearest to what was typed (fewest edits, then the
most frequent, then alphabetical: "corected" becomes "corrected", not the commoner "correct"),
or by the term itself when the collection shows none. A correction's distance is the edit distance
between the two words it names.

Surface forms come from the collection's lowercased whitespace words (the fuzzy vocabulary,
with each word's document frequency): a word's *leading token* (the seed token it begins with)
is a surface form of its analyzer term, counted with the word's df, so "search," and
"search-engine" count for "search" while "(search" does not. Only words beginning with one of
:func:`surface_prefixes` are read, so a store finds them with a few index range scans; every
surface word of a term begins with one of its prefixes (see that function for why).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from rag_plugin.lexical.analyzers import Analyzer, StemmingAnalyzer, tokenize

__all__ = [
    "Correction",
    "QueryCorrection",
    "correct_with",
    "prefix_end",
    "surface_forms",
    "surface_prefixes",
]


@dataclass(frozen=True, slots=True)
class Correction:
    """One query word replaced by the closest vocabulary word."""

    original: str
    corrected: str
    distance: int


@dataclass(frozen=True, slots=True)
class QueryCorrection:
    """A query after typo correction, with every change made to it (distance > 0 only)."""

    query: str
    corrections: tuple[Correction, ...] = ()


Closest = Callable[[Sequence[str]], Mapping[str, tuple[str, int] | None]]
"""Given distinct terms, each one's closest vocabulary term and distance (None: nothing close)."""

WordsStartingWith = Callable[[Sequence[str]], Iterable[tuple[str, int]]]
"""Given prefixes, the collection words beginning with any of them, each with its df, once."""


def correct_with(
    analyzer: Analyzer, query: str, closest: Closest, words_starting_with: WordsStartingWith
) -> QueryCorrection:
    """Correct ``query`` with a store's vocabulary lookups (see the module docstring)."""
    if not isinstance(analyzer, StemmingAnalyzer):
        return _correct_terms(analyzer, query, closest)
    words = tokenize(query)
    # A stopword, or a word the analyzer shrinks to nothing, has no term and stays as typed.
    terms = [_term(analyzer, word) for word in words]
    distinct = list(dict.fromkeys(term for term in terms if term is not None))
    if not distinct:
        return QueryCorrection(query=query)
    matches = closest(distinct)
    replaced: dict[str, str] = {}
    for term in distinct:
        match = matches.get(term)
        if match is not None and match[1] > 0:
            replaced[term] = match[0]
    forms = surface_forms(analyzer, sorted(set(replaced.values())), words_starting_with)
    corrected: list[str] = []
    corrections: list[Correction] = []
    for word, word_term in zip(words, terms, strict=True):
        target = replaced.get(word_term) if word_term is not None else None
        if target is None:
            replacement = word
        else:
            replacement = closest_surface(word, forms[target]) if target in forms else target
        corrected.append(replacement)
        if replacement != word:
            distance = int(Levenshtein.distance(word, replacement))
            corrections.append(Correction(word, replacement, distance))
    return QueryCorrection(" ".join(corrected), tuple(corrections))


def _correct_terms(analyzer: Analyzer, query: str, closest: Closest) -> QueryCorrection:
    """Each analyzer term of ``query`` replaced by its closest term (terms are words here)."""
    tokens = analyzer.tokens(query)
    if not tokens:
        return QueryCorrection(query=query)
    matches = closest(list(dict.fromkeys(tokens)))
    corrected: list[str] = []
    corrections: list[Correction] = []
    for token in tokens:
        match = matches.get(token)
        if match is None:
            corrected.append(token)
            continue
        word, distance = match
        corrected.append(word)
        if distance > 0:
            corrections.append(Correction(token, word, distance))
    return QueryCorrection(" ".join(corrected), tuple(corrections))


def _term(analyzer: Analyzer, token: str) -> str | None:
    """The analyzer term of one seed token, or None (a stopword, or shrunk to one byte)."""
    terms = analyzer.tokens(token)
    return terms[0] if len(terms) == 1 else None


def _leading_token(word: str) -> str | None:
    """The seed token ``word`` begins with, or None when it begins with anything else."""
    tokens = tokenize(word)
    return tokens[0] if tokens and word.startswith(tokens[0]) else None


def surface_forms(
    analyzer: Analyzer, terms: Sequence[str], words_starting_with: WordsStartingWith
) -> dict[str, dict[str, int]]:
    """Each term's surface forms in the collection with their document frequencies (terms
    the collection shows no word of are left out)."""
    prefixes = {term: surface_prefixes(analyzer, term) for term in terms}
    wanted = sorted({prefix for found in prefixes.values() for prefix in found})
    counts: dict[str, Counter[str]] = {}
    term_of: dict[str, str | None] = {}
    for word, df in words_starting_with(_outermost(wanted)):
        token = _leading_token(word)
        if token is None:
            continue
        if token not in term_of:
            term_of[token] = _term(analyzer, token)
        term = term_of[token]
        # The prefix test again, so a store that reads a superset of the words answers the same.
        if term in prefixes and token.startswith(prefixes[term]):
            counts.setdefault(term, Counter())[token] += df
    return {term: dict(found) for term, found in counts.items()}


def closest_surface(word: str, forms: Mapping[str, int]) -> str:
    """The form nearest to the typed ``word``: fewest edits, then most frequent, then first
    alphabetically."""
    return min(
        forms.items(), key=lambda item: (Levenshtein.distance(word, item[0]), -item[1], item[0])
    )[0]


def _outermost(prefixes: Sequence[str]) -> list[str]:
    """``prefixes`` (sorted) without those another one begins, so their ranges do not overlap."""
    kept: list[str] = []
    for prefix in prefixes:
        if not kept or not prefix.startswith(kept[-1]):
            kept.append(prefix)
    return kept


# German Snowball folds ä/ö/ü and their "ae"/"oe"/"ue" spellings to a/o/u and ß to "ss", so
# each of these letters of a stem may stand for any of its spellings in the word.
_GERMAN_SPELLINGS = {"a": ("a", "ä", "ae"), "o": ("o", "ö", "oe"), "u": ("u", "ü", "ue")}
_MAX_SPELLINGS = 27  # past this many, the prefixes stop early: shorter, fewer, still complete


def surface_prefixes(analyzer: Analyzer, term: str) -> tuple[str, ...]:
    """Prefixes that every surface word of ``term`` begins with one of, sorted.

    Snowball stemmers rewrite the end of a word, and their English and German rewrites never
    add more than one letter the word does not have at that place (English "study" → "studi",
    "hoping" → "hope"), so a word begins with its stem less the last letter. English's
    exceptions "dying", "lying", "tying" → "die", "lie", "tie" get the "y" spelling too;
    German folds umlauts and ß anywhere, so each spelling of the stem counts. A one-letter
    English stem is its own prefix (no English rewrite turns a word into a letter that is
    not its first). Another
    language's stemmer gives the empty prefix: every word is read.
    """
    if not isinstance(analyzer, StemmingAnalyzer):
        return (term,)
    if analyzer.language == "english":
        # A one-letter stem ("β") would give the empty prefix, every word of the collection
        # (92k words read and tokenised: 300 ms); its words begin with the letter itself.
        found = {term[:-1] or term}
        if term.endswith("ie"):
            found.add(term[:-2] + "y")
    elif analyzer.language == "german":
        found = {spelling[:-1] if whole else spelling for spelling, whole in _german(term)}
    else:
        found = {""}
    return tuple(_outermost(sorted(found)))


def _german(term: str) -> list[tuple[str, bool]]:
    """The ways a German word can spell ``term``, each with whether it spells all of it.

    Past ``_MAX_SPELLINGS`` the spellings stop where they are: each still begins some
    spelling of the whole term, so fewer and shorter prefixes cover the same words.
    """
    whole: list[tuple[str, bool]] = []
    partial = [("", 0)]
    while partial:
        following: list[tuple[str, int]] = []
        for spelling, position in partial:
            if position == len(term):
                whole.append((spelling, True))
                continue
            letter = term[position]
            following.extend(
                (spelling + option, position + 1)
                for option in _GERMAN_SPELLINGS.get(letter, (letter,))
            )
            # "sss" may be "sß" or "ßs": a ß can stand for any two s in a row.
            if term.startswith("ss", position):
                following.append((spelling + "ß", position + 2))
        if len(whole) + len(following) > _MAX_SPELLINGS:
            return whole + [(spelling, False) for spelling, at in partial if at < len(term)]
        partial = following
    return whole


def prefix_end(prefix: str) -> str | None:
    """The least string after every string that begins with ``prefix``; None if there is none.

    With ``prefix`` it bounds a range scan in code point order (Python's, and PostgreSQL's
    under the "C" collation).
    """
    while prefix:
        following = ord(prefix[-1]) + 1
        if following <= 0x10FFFF:
            if 0xD800 <= following <= 0xDFFF:  # surrogates are no characters of UTF-8 text
                following = 0xE000
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None
