"""A LlamaIndex reader for PDF, DOCX, HTML, Markdown, text and JSON(L) files, through
:mod:`rag_plugin.files`, so a LlamaIndex pipeline gets the same text and page spans as an
ingestion job does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from rag_plugin.files import DEFAULT_LIMITS, ExtractionLimits, extract, extract_isolated

PAGES_KEY = "pages"
"""Metadata key of the page spans: ``[[number, start, end], ...]`` into the document's text."""

# Spans and counts mean nothing to an embedding model or an LLM; they are for citations.
_NOT_FOR_MODELS = [PAGES_KEY, "sections", "needs_ocr_pages", "page_count", "media_type"]


class FileReader(BaseReader):
    """Reads one file into one ``Document`` whose text is the extracted text and whose
    metadata holds the title, media type, page spans (``pages``), sections and what the file
    says about itself (author, created, page count).

    ``isolated`` (the default) extracts in a child process under ``limits``
    (:func:`rag_plugin.files.extract_isolated`); ``isolated=False`` extracts in this process,
    for files you trust.
    """

    def __init__(self, *, limits: ExtractionLimits = DEFAULT_LIMITS, isolated: bool = True) -> None:
        self.limits = limits
        self.isolated = isolated

    def load_data(self, file: Path, extra_info: dict[str, Any] | None = None) -> list[Document]:
        """The file as one document; ``extra_info`` is added to its metadata."""
        path = Path(file)
        # Refuse a file over the limit before reading it into memory.
        self.limits.check_size(path.stat().st_size)
        data = path.read_bytes()
        read = extract_isolated if self.isolated else extract
        extracted = read(data, filename=path.name, limits=self.limits)
        metadata: dict[str, Any] = {
            **extracted.metadata,
            "title": extracted.title,
            "media_type": extracted.media_type,
            "file_name": path.name,
            "file_path": str(path),
            PAGES_KEY: [[page.number, page.start, page.end] for page in extracted.pages],
            "sections": [[s.start, s.end, s.heading] for s in extracted.sections],
            **(extra_info or {}),
        }
        return [
            Document(
                text=extracted.text,
                metadata=metadata,
                excluded_embed_metadata_keys=list(_NOT_FOR_MODELS),
                excluded_llm_metadata_keys=list(_NOT_FOR_MODELS),
            )
        ]
