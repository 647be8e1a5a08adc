"""Numbered context blocks, the sources list and ``[N]`` citation parsing (SPEC R4).

The seed's ``_build_context_and_sources``: block ``N`` is the template rendered for the
``N``-th chunk (default ``[Document N]`` and the content; the seed wrote the German
``Dokument``), blocks are joined by ``"\\n\\n---\\n\\n"``, and source ``N`` describes the
same chunk with ``footnote_id = N``. A chunk of a paged file (SPEC F1: metadata
``page_number``/``page_end``) is cited with its pages: its block reads
``[Document N] manual.pdf, p. 3`` and its source carries the pages, so an answer's footnote can
say where in the file it came from; other chunks' blocks are the seed's. A source's
``relevance`` is the post-weight retrieval score rounded to 3 places — before reranking, as in
the seed; the rerank info sits beside it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.retrieval import RetrievedChunk

__all__ = [
    "CONTEXT_PLACEHOLDERS",
    "DEFAULT_CONTEXT_SEPARATOR",
    "DEFAULT_CONTEXT_TEMPLATE",
    "ContextResult",
    "Source",
    "build_context",
    "build_context_result",
    "build_sources",
    "citation",
    "cited_footnotes",
    "metadata_pages",
    "page_label",
    "validate_context_template",
]

DEFAULT_CONTEXT_TEMPLATE: Final = "[Document {n}]{page_citation}\n{content}"
DEFAULT_CONTEXT_SEPARATOR: Final = "\n\n---\n\n"
CONTEXT_PLACEHOLDERS: Final = (
    "n",
    "content",
    "title",
    "source",
    "collection",
    "document_id",
    "chunk_index",
    "page",
    "page_citation",
)
"""The names a context template may use, each in braces (``{{`` and ``}}`` for braces).

``page`` is ``p. 3`` or ``pp. 3–4`` for a chunk of a paged file, else empty; ``page_citation``
is `` <title>, p. 3`` (with its leading space) for such a chunk, else empty."""

UNTITLED: Final = "Untitled"

# "[2]", "[1, 3]", "[1][2]" and "[Document 2]" all cite; numbers inside other brackets do not.
_CITATION = re.compile(r"\[\s*(?:Document\s+)?(\d+(?:\s*,\s*\d+)*)\s*\]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Source:
    """One numbered source of a context: what block ``[footnote_id]`` was taken from."""

    footnote_id: int
    chunk_id: str
    document_id: str
    title: str
    source: str
    collection: str
    relevance: float
    rerank: Mapping[str, Any] | None
    chunk_index: int
    start_offset: int
    end_offset: int
    excerpt: str
    has_image: bool = False
    page_number: int | None = None
    page_end: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def citation(self) -> str:
        """How a reader refers to it: ``"<title>, p. 3"`` (``pp. 3–4`` across pages), or the
        title for a source without pages."""
        return citation(self.title, self.page_number, self.page_end)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the field names as keys."""
        return {
            "footnote_id": self.footnote_id,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "title": self.title,
            "source": self.source,
            "collection": self.collection,
            "relevance": self.relevance,
            "rerank": dict(self.rerank) if self.rerank is not None else None,
            "chunk_index": self.chunk_index,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "excerpt": self.excerpt,
            "has_image": self.has_image,
            "page_number": self.page_number,
            "page_end": self.page_end,
            "citation": self.citation,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The context string for a prompt and the sources its numbered blocks came from."""

    context: str
    sources: tuple[Source, ...]

    def source(self, footnote_id: int) -> Source | None:
        """The source numbered ``footnote_id``, or ``None`` if there is none."""
        if 1 <= footnote_id <= len(self.sources):
            return self.sources[footnote_id - 1]
        return None


def validate_context_template(template: str) -> str:
    """Return ``template`` if it only uses :data:`CONTEXT_PLACEHOLDERS` and has ``{content}``.

    Raises :class:`InvalidInputError` naming the unknown placeholder and the allowed ones.
    """
    allowed = ", ".join("{" + name + "}" for name in CONTEXT_PLACEHOLDERS)
    if not isinstance(template, str):
        raise InvalidInputError(f"The context template must be a string, got {template!r}.")
    try:
        fields = [parsed[1:] for parsed in string.Formatter().parse(template)]
    except ValueError as exc:
        raise InvalidInputError(
            f"The context template {template!r} is malformed ({exc}); write literal braces "
            "as {{ and }}."
        ) from exc
    used: set[str] = set()
    for name, spec, conversion in fields:
        if name is None:
            continue
        if name not in CONTEXT_PLACEHOLDERS or spec or conversion:
            shown = "{" + name + ("!" + conversion if conversion else "")
            shown += (":" + spec if spec else "") + "}"
            raise InvalidInputError(
                f"The context template uses the unknown placeholder {shown}; use: {allowed}."
            )
        used.add(name)
    if "content" not in used:
        raise InvalidInputError(
            f"The context template {template!r} never inserts {{content}}; the blocks would "
            "carry no text."
        )
    return template


def build_sources(chunks: Sequence[RetrievedChunk]) -> list[Source]:
    """One :class:`Source` per chunk, numbered from 1 in the given order."""
    return [_source(n, chunk) for n, chunk in enumerate(chunks, start=1)]


def build_context(
    chunks: Sequence[RetrievedChunk],
    template: str = DEFAULT_CONTEXT_TEMPLATE,
    separator: str = DEFAULT_CONTEXT_SEPARATOR,
) -> str:
    """The numbered context blocks, joined by ``separator`` (empty for no chunks)."""
    validate_context_template(template)
    if not isinstance(separator, str):
        raise InvalidInputError(f"The context separator must be a string, got {separator!r}.")
    return separator.join(
        template.format(**_placeholders(n, chunk)) for n, chunk in enumerate(chunks, start=1)
    )


def build_context_result(
    chunks: Sequence[RetrievedChunk],
    template: str = DEFAULT_CONTEXT_TEMPLATE,
    separator: str = DEFAULT_CONTEXT_SEPARATOR,
) -> ContextResult:
    """The context string and its sources, with matching numbers."""
    return ContextResult(build_context(chunks, template, separator), tuple(build_sources(chunks)))


def cited_footnotes(answer: str) -> list[int]:
    """The footnote numbers an answer cites (``[N]``, ``[N, M]``, ``[Document N]``), in order
    of first citation, each once."""
    numbers: list[int] = []
    for match in _CITATION.finditer(answer):
        numbers.extend(int(part) for part in match.group(1).split(","))
    return list(dict.fromkeys(numbers))


def page_label(page_number: int | None, page_end: int | None = None) -> str:
    """``"p. 3"``, ``"pp. 3–4"`` when the span ends on a later page, or ``""`` without a page."""
    if page_number is None:
        return ""
    if page_end is not None and page_end > page_number:
        return f"pp. {page_number}\u2013{page_end}"
    return f"p. {page_number}"


def citation(title: str, page_number: int | None, page_end: int | None = None) -> str:
    """``"<title>, p. 3"``, or ``title`` alone when there is no page."""
    pages = page_label(page_number, page_end)
    return f"{title}, {pages}" if pages else title


def metadata_pages(metadata: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """A chunk's first and last page from its metadata (``page_number``, ``page_end``);
    ``(None, None)`` when it has none (metadata a caller wrote by hand may hold anything: only
    positive integers are pages, and an end before the start is the start)."""
    start = _page(metadata.get("page_number"))
    if start is None:
        return None, None
    end = _page(metadata.get("page_end"))
    return start, end if end is not None and end >= start else start


def _pages(chunk: RetrievedChunk) -> tuple[int | None, int | None]:
    return metadata_pages(chunk.metadata)


def _page(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _title(chunk: RetrievedChunk) -> str:
    for key in ("title", "source"):
        value = chunk.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return UNTITLED


def _source_name(chunk: RetrievedChunk) -> str:
    value = chunk.metadata.get("source")
    return value if isinstance(value, str) else ""


def _placeholders(n: int, chunk: RetrievedChunk) -> dict[str, object]:
    first, last = _pages(chunk)
    return {
        "n": n,
        "content": chunk.content,
        "title": _title(chunk),
        "source": _source_name(chunk),
        "collection": chunk.label,
        "document_id": chunk.document_id,
        "chunk_index": chunk.chunk.index,
        "page": page_label(first, last),
        "page_citation": f" {citation(_title(chunk), first, last)}" if first is not None else "",
    }


def _source(n: int, chunk: RetrievedChunk) -> Source:
    first, last = _pages(chunk)
    return Source(
        footnote_id=n,
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        title=_title(chunk),
        source=_source_name(chunk),
        collection=chunk.label,
        relevance=round(chunk.score, 3),
        rerank=MappingProxyType(chunk.rerank.as_dict()) if chunk.rerank is not None else None,
        chunk_index=chunk.chunk.index,
        start_offset=chunk.chunk.start_offset,
        end_offset=chunk.chunk.end_offset,
        excerpt=chunk.content,
        has_image=chunk.has_image,
        page_number=first,
        page_end=last,
        metadata=MappingProxyType(dict(chunk.metadata)),
    )
