"""What extraction makes of a file: one text, the exact span of every page, and its sections.

Chunks are cut from :attr:`ExtractedDocument.text` with character offsets, so a page or a
section is a character span of that text too: attributing a chunk to pages is a binary
search, never a search for the chunk's words.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from rag_plugin.exceptions import InvalidInputError

if TYPE_CHECKING:
    from rag_plugin.chunking import Chunk

PAGE_SEPARATOR = "\n\n"
"""Put between consecutive pages' texts; it belongs to no page."""

BLOCK_SEPARATOR = "\n\n"
"""Put between paragraphs, headings and tables on one page."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page: ``text[start:end]`` of its document is the page's text (empty for a page
    whose text could not be read, such as a scan with no OCR)."""

    number: int
    start: int
    end: int
    has_image: bool = False
    needs_ocr: bool = False
    """The page has no text layer and OCR was not run, so its text is missing."""
    ocr: bool = False
    """The page's text was recognised by OCR, not read from the file."""


@dataclass(frozen=True, slots=True)
class Section:
    """A span of the text under one heading, up to the next heading (the heading included)."""

    start: int
    end: int
    heading: str
    level: int


class PageRange(NamedTuple):
    """The pages a character span covers: where it starts and ends (1-based numbers), and
    whether any page from the first to the last holds an image."""

    page_number: int
    page_end: int
    has_image: bool


@dataclass(frozen=True)
class ExtractedDocument:
    """A file's text with its pages (contiguous, in order, :data:`PAGE_SEPARATOR` between
    them), its sections where the format has headings, and what the file says about itself.

    ``metadata`` holds only JSON values (``page_count`` always; ``author`` and ``created``
    where the format records them; ``needs_ocr_pages`` when a page still needs OCR), so it
    can be stored as a document's metadata as it is.
    """

    text: str
    pages: tuple[Page, ...]
    title: str
    media_type: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    sections: tuple[Section, ...] = ()
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _section_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_pages(self.text, self.pages)
        object.__setattr__(self, "_starts", tuple(page.start for page in self.pages))
        object.__setattr__(self, "_section_starts", tuple(s.start for s in self.sections))

    @property
    def needs_ocr_pages(self) -> tuple[int, ...]:
        """The numbers of the pages whose text is missing until they are OCR'd."""
        return tuple(page.number for page in self.pages if page.needs_ocr)

    def page_text(self, number: int) -> str:
        """The text of page ``number`` (1-based)."""
        page = self.pages[number - 1]
        return self.text[page.start : page.end]

    def pages_of(self, start: int, end: int) -> PageRange:
        """The pages that the span ``text[start:end]`` (a chunk's offsets) lies on.

        A span that starts in a separator counts from the page before it; its end is
        exclusive, so a span ending exactly where a page ends stays on that page.
        """
        if not 0 <= start < end <= len(self.text):
            raise InvalidInputError(
                f"The span [{start}, {end}) is not a non-empty span of a text of "
                f"{len(self.text)} characters; pass 0 <= start < end <= len(text)."
            )
        first = max(bisect_right(self._starts, start) - 1, 0)
        last = max(bisect_right(self._starts, end - 1) - 1, first)
        has_image = any(page.has_image for page in self.pages[first : last + 1])
        return PageRange(self.pages[first].number, self.pages[last].number, has_image)

    def chunk_metadata(self, chunk: Chunk) -> dict[str, Any]:
        """What a chunk of :attr:`text` carries of the file (SPEC F1): ``page_number`` (the
        page it starts on), ``page_end``, ``has_image``, and ``section`` where it lies under a
        heading. Pass it to :func:`rag_plugin.ingest.ingest_texts` as ``chunk_metadata``."""
        pages = self.pages_of(chunk.start_offset, chunk.end_offset)
        found: dict[str, Any] = pages._asdict()
        section = self.section_at(chunk.start_offset)
        if section is not None:
            found["section"] = section
        return found

    def section_at(self, offset: int) -> str | None:
        """The heading of the section that holds character ``offset``, or None before the
        first heading (and for formats without headings)."""
        index = bisect_right(self._section_starts, offset) - 1
        if index < 0:
            return None
        section = self.sections[index]
        return section.heading if offset < section.end else None

    def as_json(self) -> dict[str, Any]:
        """The document as JSON values (pages as ``[number, start, end, has_image, needs_ocr,
        ocr]``, sections as ``[start, end, heading, level]``), for :meth:`from_json`."""
        return {
            "text": self.text,
            "pages": [
                [p.number, p.start, p.end, p.has_image, p.needs_ocr, p.ocr] for p in self.pages
            ],
            "title": self.title,
            "media_type": self.media_type,
            "metadata": dict(self.metadata),
            "sections": [[s.start, s.end, s.heading, s.level] for s in self.sections],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExtractedDocument:
        """The document :meth:`as_json` described (its pages checked again)."""
        try:
            return cls(
                text=str(data["text"]),
                pages=tuple(
                    Page(int(n), int(s), int(e), bool(i), bool(o), bool(r))
                    for n, s, e, i, o, r in data["pages"]
                ),
                title=str(data["title"]),
                media_type=str(data["media_type"]),
                metadata=dict(data["metadata"]),
                sections=tuple(
                    Section(int(s), int(e), str(h), int(v)) for s, e, h, v in data["sections"]
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"Not an extracted document's JSON: {exc!r}.") from exc


def _check_pages(text: str, pages: Sequence[Page]) -> None:
    """Refuse pages that do not tile ``text`` exactly: a wrong span would misplace every
    citation silently."""
    if not pages:
        raise InvalidInputError("A document has at least one page; got none.")
    expected = 0
    for position, page in enumerate(pages):
        between = text[page.start - len(PAGE_SEPARATOR) : page.start] if position else ""
        if (
            page.number != position + 1
            or page.start != expected
            or page.end < page.start
            or between not in ("", PAGE_SEPARATOR)
        ):
            raise InvalidInputError(
                f"Page {page.number} spans [{page.start}, {page.end}); pages must be numbered "
                f"from 1, each starting after the previous one and {PAGE_SEPARATOR!r} "
                f"(here at {expected})."
            )
        expected = page.end + len(PAGE_SEPARATOR)
    if pages[-1].end != len(text):
        raise InvalidInputError(
            f"The pages end at {pages[-1].end} but the text has {len(text)} characters; the "
            "last page must end where the text ends."
        )


@dataclass
class _PageDraft:
    blocks: list[str] = field(default_factory=list)
    headings: dict[int, tuple[str, int]] = field(default_factory=dict)
    has_image: bool = False
    needs_ocr: bool = False
    ocr: bool = False


class DocumentBuilder:
    """Lays out a file's blocks (paragraphs, headings, tables) page by page, so that every
    format computes offsets, pages and sections one way.

    Blocks on a page are joined by :data:`BLOCK_SEPARATOR`, pages by :data:`PAGE_SEPARATOR`;
    a block is stripped of surrounding whitespace and an empty one is dropped.
    """

    def __init__(self) -> None:
        self._pages: list[_PageDraft] = [_PageDraft()]

    def new_page(
        self, *, has_image: bool = False, needs_ocr: bool = False, ocr: bool = False
    ) -> None:
        """End the current page and start the next one."""
        self._pages.append(_PageDraft(has_image=has_image, needs_ocr=needs_ocr, ocr=ocr))

    def set_page(
        self, *, has_image: bool = False, needs_ocr: bool = False, ocr: bool = False
    ) -> None:
        """Set the current page's flags (a flag once set stays set)."""
        page = self._pages[-1]
        page.has_image |= has_image
        page.needs_ocr |= needs_ocr
        page.ocr |= ocr

    def add_block(self, text: str, *, heading_level: int | None = None) -> None:
        """Add a block to the current page; a heading also starts a section."""
        text = text.strip()
        if not text:
            return
        page = self._pages[-1]
        if heading_level is not None:
            page.headings[len(page.blocks)] = (text, heading_level)
        page.blocks.append(text)

    @property
    def page_count(self) -> int:
        """The pages so far, the current one included."""
        return len(self._pages)

    def build(
        self, *, title: str, media_type: str, metadata: Mapping[str, Any] | None = None
    ) -> ExtractedDocument:
        """The document: its text, pages and sections, and ``page_count`` (and
        ``needs_ocr_pages`` when a page needs OCR) added to ``metadata``."""
        parts: list[str] = []
        pages: list[Page] = []
        headings: list[tuple[int, str, int]] = []
        offset = 0
        for number, draft in enumerate(self._pages, start=1):
            if number > 1:
                parts.append(PAGE_SEPARATOR)
                offset += len(PAGE_SEPARATOR)
            start = offset
            for index, block in enumerate(draft.blocks):
                if index:
                    parts.append(BLOCK_SEPARATOR)
                    offset += len(BLOCK_SEPARATOR)
                if index in draft.headings:
                    heading, level = draft.headings[index]
                    headings.append((offset, heading, level))
                parts.append(block)
                offset += len(block)
            pages.append(Page(number, start, offset, draft.has_image, draft.needs_ocr, draft.ocr))
        text = "".join(parts)
        sections = sections_from_headings(text, headings)
        info = {**(metadata or {}), "page_count": len(pages)}
        needs_ocr = [page.number for page in pages if page.needs_ocr]
        if needs_ocr:
            info["needs_ocr_pages"] = needs_ocr
        return ExtractedDocument(text, tuple(pages), title, media_type, info, sections)


def sections_from_headings(
    text: str, headings: Sequence[tuple[int, str, int]]
) -> tuple[Section, ...]:
    """The sections of ``text`` given its headings as ``(offset, heading, level)`` in text
    order: each runs from its heading to the last non-space character before the next one
    (the last one to the end of the text)."""
    sections = []
    for position, (start, heading, level) in enumerate(headings):
        if position + 1 == len(headings):
            end = len(text)
        else:
            end = headings[position + 1][0]
            while end > start and text[end - 1].isspace():
                end -= 1
        sections.append(Section(start, end, heading, level))
    return tuple(sections)
