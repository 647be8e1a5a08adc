"""Analyzers: how text becomes the terms both stores index for BM25 and fuzzy matching (L1, L6).

``seed`` is the seed server's tokenizer, exactly: lowercase, split on every character that is
not alphanumeric in Rust's sense (Unicode ``Alphabetic`` or a numeric category, so ``_`` and
``-`` split too), drop tokens of one UTF-8 byte or less. The language analyzers take the seed
tokens, drop stopwords and Snowball-stem the rest with PyStemmer.

One departure from the seed: a token, or a fuzzy word (:func:`text_words`), longer than
:data:`MAX_WORD_CHARS` characters is cut to that length, in documents and queries alike. A
word is a key of the PostgreSQL store's vocabulary and postings indexes, whose B-tree entries
hold at most ≈ 2,700 bytes, and real documents hold such "words": a base64 image, a minified
script, a long URL. Cut, they still count in a chunk's length and still match the same word
in a query; nothing a person searches for is that long. (A word of 257 to ≈ 2,700 bytes
indexed before this rule by the PostgreSQL store stays whole until its document is written
again, and a query no longer matches it.)
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

import regex
import Stemmer

from rag_plugin.exceptions import InvalidInputError

__all__ = [
    "ANALYZER_NAMES",
    "MAX_WORD_CHARS",
    "Analyzer",
    "EnglishAnalyzer",
    "GermanAnalyzer",
    "SeedAnalyzer",
    "StemmingAnalyzer",
    "get_analyzer",
    "resolve_analyzer",
    "text_words",
    "tokenize",
]

# Rust's char::is_alphanumeric is Alphabetic || Nd || Nl || No; Python's str.isalnum differs on
# combining marks (Other_Alphabetic), which would split many Indic and Arabic words.
_TOKEN = regex.compile(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]+")


MAX_WORD_CHARS = 256
"""The longest token or fuzzy word kept whole: 256 characters, at most 1,024 UTF-8 bytes."""


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the seed's BM25 tokens, in order, repetitions kept."""
    return [
        token[:MAX_WORD_CHARS] for token in _TOKEN.findall(text.lower()) if len(token.encode()) > 1
    ]


def text_words(text: str) -> list[str]:
    """The fuzzy leg's words of ``text``: lowercased, split on whitespace, in order,
    repetitions kept, each cut to :data:`MAX_WORD_CHARS` characters."""
    return [word[:MAX_WORD_CHARS] for word in text.lower().split()]


class Analyzer(ABC):
    """Turns text into index terms; the same analyzer must index and query a collection."""

    name: str
    stopwords: frozenset[str] = frozenset()
    """Words the analyzer drops; the fuzzy leg leaves them out of queries too."""

    @abstractmethod
    def tokens(self, text: str) -> list[str]:
        """The terms of ``text``, in order, repetitions kept."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SeedAnalyzer(Analyzer):
    """The seed server's tokenizer, unchanged: no stopwords, no stemming."""

    name = "seed"

    def tokens(self, text: str) -> list[str]:
        """The seed tokens of ``text``."""
        return tokenize(text)


class StemmingAnalyzer(Analyzer):
    """Seed tokens minus stopwords, Snowball-stemmed in one language."""

    language: str
    stopwords: frozenset[str]

    def __init__(self) -> None:
        # PyStemmer's stemmer objects keep a cache and are not safe to share across threads.
        self._local = threading.local()

    def _stemmer(self) -> Stemmer.Stemmer:
        stemmer: Stemmer.Stemmer | None = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = Stemmer.Stemmer(self.language)
            self._local.stemmer = stemmer
        return stemmer

    def tokens(self, text: str) -> list[str]:
        """The stems of the non-stopword seed tokens of ``text``."""
        words = [token for token in tokenize(text) if token not in self.stopwords]
        if not words:
            return []
        stems: list[str] = self._stemmer().stemWords(words)
        # Stemming can shrink a token to one byte; the seed never indexes such terms.
        return [stem for stem in stems if len(stem.encode()) > 1]


def _stopwords(words: str) -> frozenset[str]:
    # Tokenized like documents, so a listed word and an indexed token always compare equal.
    return frozenset(token for word in words.split() for token in tokenize(word))


# Snowball's English stop list. Contractions split into pieces ("isn't" -> "isn"); the pieces
# that are no words of their own are listed, while "won" and "don" are kept out.
_ENGLISH_STOPWORDS = _stopwords(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing would should could ought a an the and but if or because as until while of at by for
    with about against between into through during before after above below to from up down
    in out on off over under again further then once here there when where why how all any
    both each few more most other some such no nor not only own same so than too very can will
    just also isn aren wasn weren hasn haven hadn doesn didn shouldn couldn wouldn mustn needn
    ll ve re
    """
)

# Snowball's German stop list (umlauts written as such).
_GERMAN_STOPWORDS = _stopwords(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anderm andern anderr anders auch auf aus bei bin bis bist da damit dann der den des
    dem die das dass daß derselbe derselben denselben desselben demselben dieselbe dieselben
    dasselbe dazu dein deine deinem deinen deiner deines denn derer dessen dich dir du dies
    diese diesem diesen dieser dieses doch dort durch ein eine einem einen einer eines einig
    einige einigem einigen einiger einiges einmal er ihn ihm es etwas euer eure eurem euren
    eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich mich mir
    ihr ihre ihrem ihren ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene
    jenem jenen jener jenes jetzt kann kein keine keinem keinen keiner keines können könnte
    machen man manche manchem manchen mancher manches mein meine meinem meinen meiner meines
    mit muss musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen
    seiner seines selbst sich sie ihnen sind so solche solchem solchen solcher solches soll
    sollte sondern sonst über um und uns unsere unserem unseren unser unseres unter viel vom
    von vor während war waren warst was weg weil weiter welche welchem welchen welcher welches
    wenn werde werden wie wieder will wir wird wirst wo wollen wollte würde würden zu zum zur
    zwar zwischen
    """
)


class EnglishAnalyzer(StemmingAnalyzer):
    """English: seed tokens minus English stopwords, Snowball (Porter2) stems."""

    name = "english"
    language = "english"
    stopwords = _ENGLISH_STOPWORDS


class GermanAnalyzer(StemmingAnalyzer):
    """German: seed tokens minus German stopwords, Snowball stems."""

    name = "german"
    language = "german"
    stopwords = _GERMAN_STOPWORDS


_REGISTRY: dict[str, Callable[[], Analyzer]] = {
    SeedAnalyzer.name: SeedAnalyzer,
    EnglishAnalyzer.name: EnglishAnalyzer,
    GermanAnalyzer.name: GermanAnalyzer,
}
_INSTANCES: dict[str, Analyzer] = {}
_LOCK = threading.Lock()

ANALYZER_NAMES: tuple[str, ...] = tuple(_REGISTRY)
"""Every analyzer name :func:`get_analyzer` accepts; ``seed`` first."""


def get_analyzer(name: str) -> Analyzer:
    """The shared analyzer called ``name`` (case-insensitive); unknown names raise."""
    key = str(name).strip().lower()
    factory = _REGISTRY.get(key)
    if factory is None:
        raise InvalidInputError(f"Unknown analyzer: {name}. Use: {', '.join(ANALYZER_NAMES)}")
    with _LOCK:
        analyzer = _INSTANCES.get(key)
        if analyzer is None:
            analyzer = _INSTANCES[key] = factory()
    return analyzer


def resolve_analyzer(analyzer: str | Analyzer) -> Analyzer:
    """``analyzer`` itself, or the registered analyzer of that name."""
    return analyzer if isinstance(analyzer, Analyzer) else get_analyzer(analyzer)
