"""Extracted text scored against the known text of bench/files.py's files.

The character error rate (CER): Levenshtein distance between the extracted text and the
reference over the reference's length, both NFKC-normalised with every run of whitespace made
one space (line breaks are not errors), per page (:func:`page_errors`) and per file. A chunk's
pages are checked by finding its first and last :data:`HEAD` characters in the reference
(:func:`chunk_pages`). :func:`fidelity` and :func:`ocr_fidelity` are the bench's fidelity and
OCR measurements.
"""

from __future__ import annotations

import itertools
import statistics
import time
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rapidfuzz.distance import Levenshtein

from bench.files_make import KINDS, MadeFile, scanned
from bench.files_readers import llama_read
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.files import ExtractedDocument, extract

HEAD = 40
"""How many characters of a chunk's start (and end) locate it in the reference."""


def normalized(text: str) -> str:
    """``text`` as the error rate compares it: NFKC, each run of whitespace one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def cer(extracted: str, reference: str) -> tuple[int, int]:
    """(edit distance, reference length) of the normalised texts."""
    ours, wanted = normalized(extracted), normalized(reference)
    return Levenshtein.distance(ours, wanted), len(wanted)


def error_rate(pairs: Sequence[tuple[int, int]]) -> float:
    """Summed distances over summed reference lengths."""
    return round(sum(d for d, _ in pairs) / max(sum(n for _, n in pairs), 1), 5)


def page_errors(pages: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """CER per page of ``pages`` against ``references``, summarised."""
    if len(pages) != len(references):
        raise RuntimeError(f"{len(pages)} pages read, {len(references)} made.")
    pairs = [cer(page, reference) for page, reference in zip(pages, references, strict=True)]
    rates = [d / max(n, 1) for d, n in pairs]
    return {
        "pages": len(rates),
        "mean": round(statistics.mean(rates), 5),
        "median": round(statistics.median(rates), 5),
        "max": round(max(rates), 5),
        "worst_page": rates.index(max(rates)) + 1,
        "over_1pct": sum(rate > 0.01 for rate in rates),
        "overall": error_rate(pairs),
        "per_page": [round(rate, 5) for rate in rates],
    }


class Reference:
    """A file's reference pages, normalised and joined by one space, to find where a chunk's
    characters lie."""

    def __init__(self, pages: Sequence[str]) -> None:
        texts = [normalized(page) for page in pages]
        self.text = " ".join(texts)
        self.starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))

    def page_at(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def pages_found(self, snippet: str, *, ending: bool) -> set[int]:
        """The pages on which ``snippet`` starts (or ends, with ``ending``) in the reference."""
        found = set()
        position = self.text.find(snippet)
        while position >= 0:
            found.add(self.page_at(position + (len(snippet) - 1 if ending else 0)))
            position = self.text.find(snippet, position + 1)
        return found


def chunk_pages(
    chunks: Sequence[tuple[str, int, int]], reference: Reference, *, keep: int = 5
) -> dict[str, Any]:
    """Check chunks given as (content, page_number, page_end) against ``reference``."""
    right = wrong_start = wrong_end = unknown = 0
    examples: list[dict[str, Any]] = []
    for index, (content, first, last) in enumerate(chunks):
        text = normalized(content)
        starts = reference.pages_found(text[:HEAD], ending=False)
        ends = reference.pages_found(text[-HEAD:], ending=True)
        if not starts or not ends:
            unknown += 1
            continue
        start_ok, end_ok = first in starts, last in ends
        right += start_ok and end_ok
        wrong_start += not start_ok
        wrong_end += not end_ok
        if not (start_ok and end_ok) and len(examples) < keep:
            examples.append(
                {
                    "chunk": index,
                    "page_number": first,
                    "starts_on": sorted(starts),
                    "page_end": last,
                    "ends_on": sorted(ends),
                    "head": text[:HEAD],
                }
            )
    return {
        "chunks": len(chunks),
        "right": right,
        "wrong_page_number": wrong_start,
        "wrong_page_end": wrong_end,
        "not_found": unknown,
        "examples": examples,
    }


def extracted_chunks(document: ExtractedDocument) -> list[tuple[str, int, int]]:
    """The document's text chunked as the API chunks it, with each chunk's pages."""
    chunker = TextChunker(api_chunker_config())
    found = []
    for chunk in chunker.chunk(document.text):
        pages = document.chunk_metadata(chunk)
        found.append((chunk.content, int(pages["page_number"]), int(pages["page_end"])))
    return found


def fidelity(made: MadeFile, folder: Path) -> dict[str, Any]:
    """CER per page of ours and pypdf's, by layout, and every chunk's pages."""
    document = extract(made.data, filename=made.name)
    ours = [document.page_text(page.number) for page in document.pages]
    path = folder / f"fidelity-{made.name}"
    path.write_bytes(made.data)
    llama = [d.text for d in llama_read([path])]
    by_kind = {
        kind: page_errors(
            [p for p, k in zip(ours, made.kinds, strict=True) if k == kind],
            [r for r, k in zip(made.pages, made.kinds, strict=True) if k == kind],
        )
        for kind in KINDS
        if kind in made.kinds
    }
    return {
        "ours": page_errors(ours, made.pages),
        "ours_by_kind": by_kind,
        "llama": page_errors(llama, made.pages),
        "chunks": chunk_pages(extracted_chunks(document), Reference(made.pages)),
    }


def ocr_fidelity(made: MadeFile, pages: int) -> dict[str, Any]:
    """CER per page of Tesseract's text of the rendered pages."""
    scan = scanned(made, pages)
    started = time.perf_counter()
    document = extract(scan.data, filename=scan.name)
    seconds = time.perf_counter() - started
    if not all(page.ocr for page in document.pages):
        raise RuntimeError("The scanned pages were not OCR'd (is tesseract installed?).")
    found = page_errors([document.page_text(p.number) for p in document.pages], scan.pages)
    return {**found, "s_per_page": round(seconds / pages, 2)}
