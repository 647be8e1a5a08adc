"""File extraction measured (issue 32, item 5): speed against LlamaIndex's file readers,
fidelity on PDFs whose text is known, OCR, and a long PDF through the job path.

Not a test. Needs ``make bench-deps`` (LlamaIndex's file readers, the baseline). Run from the
repository root:
``PYTHONPATH=. .venv/bin/python bench/files.py [--pages 300] [--file-pages 30] [--ocr-pages 3]``
(``--pages 20`` for a quick try; ``--no-job`` skips the job).

Every file is made here from the SciFact abstracts (title + text, in corpus order; the few
characters DejaVu Serif has no glyph for are left out), so the text of each page is known:

- **PDF** (fpdf2, DejaVu Serif 10 pt, A4): pages in turn of one column, two columns and one
  column under a figure (a picture without text), every page with a running header and a
  "Page n of N" footer. The text flows from page to page and column to column; the reference
  of a page is the lines drawn on it in reading order (left column first), without the
  header and footer, which a reader should drop.
- **DOCX** (python-docx): a Heading 1 and a paragraph per abstract, an explicit page break
  after about 3,000 characters (a DOCX's pages are its explicit breaks).
- **HTML**: a page of three abstracts (``h1``/``h2`` titles, ``p`` texts) inside ``<main>``,
  with a navigation bar, banner, sidebar and footer around it; a file is one page.

In one run:

- **Speed.** ``--file-pages`` pages of each type, read from a temporary folder: by
  :func:`rag_plugin.files.extract` (in this process), by
  :func:`rag_plugin.files.extract_isolated` (a child process per file, as the ingestion job
  reads it; the fork server warmed first) and by ``SimpleDirectoryReader(input_files=...)
  .load_data()`` with its default readers (``PDFReader``: pypdf, a Document per page;
  ``DocxReader``: docx2txt; ``.html`` has no default reader, so its markup is read as text).
  ``--rounds`` rounds after one that warms them up, the three in a different order each
  round; the median round counts. Pages/s and the ratio ours / LlamaIndex; each one's
  character error rate against the reference on the whole file. (The isolated children are
  kept from importing this script, as multiprocessing would have them do: see
  :func:`children_without_main`.)
- **Fidelity.** The PDF's character error rate (CER) per page: Levenshtein distance between
  the extracted page and its reference over the reference's length, both NFKC-normalised
  with every run of whitespace made one space (line breaks are not errors). Target: ≤ 1 %.
  pypdf's pages (LlamaIndex's ``PDFReader``) are measured the same way.
- **Chunk pages.** The extracted text chunked as the API chunks it (``api_chunker_config()``,
  words 200/50), each chunk's ``page_number`` and ``page_end`` from
  ``ExtractedDocument.chunk_metadata``: right when the chunk's first 40 characters
  (normalised) are found in the reference starting on ``page_number``, and its last 40 ending
  on ``page_end``; a chunk whose characters are found nowhere is counted apart.
- **OCR.** The first ``--ocr-pages`` pages of that PDF rendered at 300 dpi (pypdfium2,
  greyscale) into a PDF of images only, extracted with Tesseract; CER per page as above.
- **Job.** A ``--pages``-page PDF made the same way, uploaded as alice of tenant acme with
  ``POST /api/rag/files`` to the portal under gunicorn on a scratch database with one worker
  (``manage.py rag_worker``; the helpers of :mod:`bench.ingest` and :mod:`bench.ingest_jobs`),
  after a warm-up upload that loads the model and starts the parser's fork server. The job is
  polled (``GET /api/rag/jobs/<id>``) every half second, its stage and progress printed as it
  goes. Wall time = from the upload's start to the job's ``finished_at``. The bare model
  (``TextEmbedding.embed`` of the same model, in this process) embeds the same chunk texts in
  the worker's batches (``model_batches``) right before and right after the job; their mean is
  the baseline: overhead = (job − model) / model. Each stage's time (from the polls) shows
  where the rest goes; the embedding stage is also set against the bare model. The stored
  chunks' pages (``GET /api/rag/documents/<id>``) are checked as above.
"""

from __future__ import annotations

import argparse
import html
import io
import itertools
import json
import logging
import statistics
import sys
import tempfile
import time
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import docx
import httpx
import pypdfium2
from docx.enum.text import WD_BREAK
from fontTools.ttLib import TTFont
from fpdf import FPDF
from fpdf.enums import MethodReturnValue
from PIL import Image, ImageDraw
from rapidfuzz.distance import Levenshtein

from bench.beir import load_beir
from bench.ingest import HOST, PASSWORD, bare_model_seconds, model_batches, served
from bench.ingest_jobs import LOGS, POLL_S, model_pass, wait_registered
from portal import launch
from portal.embedded_db import PROJECT_ROOT
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.files import ExtractedDocument, extract, extract_isolated

FONTS = Path("/usr/share/fonts/truetype/dejavu")
SERIF = "serif"
FONT_FILES = {"": FONTS / "DejaVuSerif.ttf", "B": FONTS / "DejaVuSerif-Bold.ttf"}
RUNNING_HEADER = "SciFact abstracts - a benchmark of file extraction"
KINDS = ("one column", "two columns", "figure")
"""The layout of page n is ``KINDS[(n - 1) % 3]``."""
FONT_PT = 10
LINE_MM = 5.0
LEFT_MM, WIDTH_MM = 15.0, 180.0
GUTTER_MM = 8.0
TOP_MM, BOTTOM_MM = 25.0, 275.0
PARAGRAPH_GAP_MM = 2.5
FIGURE_MM = (90.0, 45.0)
DOCX_PAGE_CHARS = 3000
HTML_ABSTRACTS = 3
HEAD = 40
"""How many characters of a chunk's start (and end) locate it in the reference."""
OCR_DPI = 300
COLLECTION = "files"
USER = "alice"
PROGRESS_EVERY_S = 5.0
ENDED = ("succeeded", "failed", "cancelled")


def normalized(text: str) -> str:
    """``text`` as the error rate compares it: NFKC, each run of whitespace one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def cer(extracted: str, reference: str) -> tuple[int, int]:
    """(edit distance, reference length) of the normalised texts."""
    ours, wanted = normalized(extracted), normalized(reference)
    return Levenshtein.distance(ours, wanted), len(wanted)


# --- Files of known text -----------------------------------------------------------------


def abstracts(data: str, split: str) -> list[tuple[str, str]]:
    """(title, text) of every SciFact abstract, whitespace normalised, without the characters
    the fonts cannot draw (so what is drawn is what the reference says)."""
    drawable = set.intersection(*(set(TTFont(path).getBestCmap()) for path in FONT_FILES.values()))

    def clean(text: str) -> str:
        return " ".join("".join(c for c in text if ord(c) in drawable or c.isspace()).split())

    corpus = load_beir(data, split).corpus.values()
    return [(clean(d.title), clean(d.text)) for d in corpus if d.title.strip() and d.text.strip()]


def chart() -> bytes:
    """A figure with no text in it: a framed line chart."""
    image = Image.new("RGB", (800, 400), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 20, 780, 370), outline="black", width=3)
    draw.line([(60, 340), (200, 250), (340, 280), (480, 150), (620, 180), (760, 60)], "blue", 6)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


class _Paper(FPDF):
    """A page of the benchmark's PDFs: a running header and a "Page n of N" footer."""

    def header(self) -> None:
        self.set_font(SERIF, "", 8)
        self.set_xy(LEFT_MM, 10)
        self.cell(WIDTH_MM, 5, RUNNING_HEADER, align="C")

    def footer(self) -> None:
        self.set_font(SERIF, "", 8)
        self.set_xy(LEFT_MM, 282)
        self.cell(WIDTH_MM, 5, f"Page {self.page_no()} of {{nb}}", align="C")


@dataclass
class MadeFile:
    """A file, the reference text of each of its pages and the layout of each page."""

    name: str
    data: bytes
    pages: list[str]
    kinds: list[str] = field(default_factory=list)


def make_pdf(
    source: Iterator[tuple[str, str]], pages: int, name: str = "abstracts.pdf"
) -> MadeFile:
    """A PDF of ``pages`` pages of the abstracts ``source`` yields, laid out as the module
    says; each page's reference is its lines in reading order."""
    pdf = _Paper(format="A4")
    pdf.set_auto_page_break(False)
    for style, path in FONT_FILES.items():
        pdf.add_font(SERIF, style, str(path))
    pdf.set_title("SciFact abstracts")
    figure = io.BytesIO(chart())
    pending: list[tuple[str, str]] = []  # paragraphs (style, text) still to draw
    references, kinds = [], []
    for number in range(1, pages + 1):
        pdf.add_page()
        kind = KINDS[(number - 1) % len(KINDS)]
        top = TOP_MM
        if kind == "figure":
            pdf.image(figure, x=LEFT_MM, y=top, w=FIGURE_MM[0], h=FIGURE_MM[1])
            top += FIGURE_MM[1] + LINE_MM
        if kind == "two columns":
            width = (WIDTH_MM - GUTTER_MM) / 2
            columns = [(LEFT_MM, width), (LEFT_MM + width + GUTTER_MM, width)]
        else:
            columns = [(LEFT_MM, WIDTH_MM)]
        lines: list[str] = []
        for x, width in columns:
            y = top
            while y + LINE_MM <= BOTTOM_MM:
                if not pending:
                    title, text = next(source)
                    pending = [("B", title), ("", text)]
                style, text = pending[0]
                pdf.set_font(SERIF, style, FONT_PT)
                wrapped = cast(
                    list[str],
                    pdf.multi_cell(
                        width, LINE_MM, text, dry_run=True, output=MethodReturnValue.LINES
                    ),
                )
                room = int((BOTTOM_MM - y) // LINE_MM)
                for line in wrapped[:room]:
                    pdf.set_xy(x, y)
                    pdf.cell(width, LINE_MM, line)
                    lines.append(line)
                    y += LINE_MM
                if len(wrapped) > room:
                    pending[0] = (style, " ".join(wrapped[room:]))
                    break
                pending.pop(0)
                if not pending:
                    y += PARAGRAPH_GAP_MM
        references.append("\n".join(lines))
        kinds.append(kind)
    return MadeFile(name, bytes(pdf.output()), references, kinds)


def make_docx(source: Iterator[tuple[str, str]], pages: int) -> MadeFile:
    """A DOCX of ``pages`` pages: abstracts as Heading 1 + paragraph, a page break after
    about :data:`DOCX_PAGE_CHARS` characters."""
    document = docx.Document()
    references = []
    for number in range(pages):
        page: list[str] = []
        while sum(len(block) for block in page) < DOCX_PAGE_CHARS:
            title, text = next(source)
            document.add_heading(title, 1)
            document.add_paragraph(text)
            page += [title, text]
        if number < pages - 1:
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        references.append("\n\n".join(page))
    buffer = io.BytesIO()
    document.save(buffer)
    return MadeFile("abstracts.docx", buffer.getvalue(), references)


def make_html(source: Iterator[tuple[str, str]], number: int) -> MadeFile:
    """An article of :data:`HTML_ABSTRACTS` abstracts in a page with the usual boilerplate."""
    parts = [next(source) for _ in range(HTML_ABSTRACTS)]
    body = "\n".join(
        f"<h{1 if i == 0 else 2}>{html.escape(title)}</h{1 if i == 0 else 2}>\n"
        f"<p>{html.escape(text)}</p>"
        for i, (title, text) in enumerate(parts)
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(parts[0][0])}</title></head>
<body>
<nav><a href="/">Home</a> | <a href="/topics">Topics</a> | <a href="/about">About us</a></nav>
<header><div class="banner">Subscribe to our newsletter for weekly research news!</div></header>
<main><article>
{body}
</article></main>
<aside>Related articles: vaccines, sleep, cardiology, gene therapy</aside>
<footer>Copyright 2026 Research Digest. All rights reserved. <a href="/privacy">Privacy</a></footer>
</body></html>"""
    reference = "\n\n".join(f"{title}\n\n{text}" for title, text in parts)
    return MadeFile(f"article-{number:03d}.html", page.encode("utf-8"), [reference])


# --- Speed ------------------------------------------------------------------------------


def llama_read(paths: Sequence[Path]) -> list[Any]:
    """LlamaIndex's documents of ``paths`` with SimpleDirectoryReader's default readers."""
    from llama_index.core import SimpleDirectoryReader

    return list(SimpleDirectoryReader(input_files=[str(path) for path in paths]).load_data())


def read_ours(paths: Sequence[Path]) -> list[ExtractedDocument]:
    return [extract(path.read_bytes(), filename=path.name) for path in paths]


def read_isolated(paths: Sequence[Path]) -> list[ExtractedDocument]:
    with children_without_main():
        return [extract_isolated(path.read_bytes(), filename=path.name) for path in paths]


@contextmanager
def children_without_main() -> Iterator[None]:
    """While it lasts, :func:`extract_isolated`'s children do not import this script.

    A forkserver child imports its parent's main module before it runs (multiprocessing
    prepares it so, from ``__main__.__spec__`` or ``__file__``): the worker's is manage.py,
    which imports nothing, but this script's imports (fpdf2, fontTools, the portal's launch
    helpers) cost each child about half a second, which no job pays.
    """
    main = sys.modules["__main__"]
    spec, path = main.__spec__, vars(main).pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__spec__ = spec
        if path is not None:
            main.__file__ = path


def check_llama_readers() -> None:
    """Refuse to run without LlamaIndex's file readers (the baseline would read bytes)."""
    from llama_index.core.readers.file.base import _try_loading_included_file_formats

    defaults = _try_loading_included_file_formats()
    # Its slides module calls logging.basicConfig(level=INFO) on import: every INFO line of
    # fontTools (fpdf2's font subsetting) and pgserver would be printed.
    logging.getLogger().setLevel(logging.WARNING)
    if ".pdf" not in defaults or ".docx" not in defaults:
        raise RuntimeError(
            "llama-index-readers-file is not installed, so SimpleDirectoryReader would read "
            "PDF and DOCX bytes as text: run `make bench-deps`."
        )


def speed(files: dict[str, list[MadeFile]], folder: Path, rounds: int) -> dict[str, Any]:
    """Pages/s of our extraction (in process and isolated) and LlamaIndex's, per type."""
    with children_without_main():
        extract_isolated(b"warm up the fork server")  # starts it; not timed
    readers: dict[str, Callable[[list[Path]], list[Any]]] = {
        "ours": read_ours,
        "isolated": read_isolated,
        "llama": llama_read,
    }
    report: dict[str, Any] = {}
    for label, made in files.items():
        paths = []
        for file in made:
            path = folder / file.name
            path.write_bytes(file.data)
            paths.append(path)
        pages = sum(len(file.pages) for file in made)
        out: dict[str, list[Any]] = {}
        seconds: dict[str, list[float]] = {name: [] for name in readers}
        names = list(readers)
        for number in range(rounds + 1):  # the first round warms up (imports, caches)
            for name in names[number % 3 :] + names[: number % 3]:
                started = time.perf_counter()
                out[name] = readers[name](paths)
                if number:
                    seconds[name].append(time.perf_counter() - started)
        ours_docs: list[ExtractedDocument] = out["ours"]
        got = sum(len(document.pages) for document in ours_docs)
        if got != pages:
            raise RuntimeError(f"{label}: {pages} pages made, {got} extracted.")
        if [d.text for d in out["isolated"]] != [d.text for d in ours_docs]:
            raise RuntimeError(f"{label}: extract_isolated read other text than extract.")
        references = ["\n\n".join(file.pages) for file in made]
        by_file: dict[str, list[str]] = {}
        for document in out["llama"]:
            by_file.setdefault(document.metadata["file_name"], []).append(document.text)
        llama_texts = ["\n".join(by_file.get(file.name, [])) for file in made]
        median = {name: statistics.median(times) for name, times in seconds.items()}
        report[label] = {
            "files": len(made),
            "pages": pages,
            "ours_s": round(median["ours"], 3),
            "isolated_s": round(median["isolated"], 3),
            "llama_s": round(median["llama"], 3),
            "ours_pages_per_s": round(pages / median["ours"], 1),
            "isolated_pages_per_s": round(pages / median["isolated"], 1),
            "llama_pages_per_s": round(pages / median["llama"], 1),
            "ours_over_llama": round(median["llama"] / median["ours"], 2),
            "isolated_over_llama": round(median["llama"] / median["isolated"], 2),
            "ours_cer": _rate([cer(d.text, r) for d, r in zip(ours_docs, references, strict=True)]),
            "llama_cer": _rate([cer(t, r) for t, r in zip(llama_texts, references, strict=True)]),
        }
    return report


def _rate(pairs: Sequence[tuple[int, int]]) -> float:
    """Summed distances over summed reference lengths."""
    return round(sum(d for d, _ in pairs) / max(sum(n for _, n in pairs), 1), 5)


# --- Fidelity ---------------------------------------------------------------------------


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
        "overall": _rate(pairs),
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


def scanned(made: MadeFile, pages: int) -> MadeFile:
    """The first ``pages`` pages of ``made`` as a PDF of page images only."""
    source = pypdfium2.PdfDocument(made.data)
    pdf = FPDF(format="A4")
    try:
        for index in range(pages):
            page = source[index]
            image = page.render(scale=OCR_DPI / 72, grayscale=True).to_pil()
            page.close()
            buffer = io.BytesIO()
            image.save(buffer, "PNG")
            pdf.add_page()
            pdf.image(buffer, x=0, y=0, w=pdf.w, h=pdf.h)
    finally:
        source.close()
    return MadeFile(f"scanned-{made.name}", bytes(pdf.output()), made.pages[:pages])


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


# --- The job path -----------------------------------------------------------------------


def upload(client: httpx.Client, collection: str, name: str, data: bytes) -> str:
    """``POST /api/rag/files`` of one file; its job's id."""
    response = client.post(
        "/api/rag/files", data={"collection": collection}, files=[("file", (name, data))]
    )
    if response.status_code != 202:
        raise RuntimeError(f"upload failed: {response.status_code} {response.text}")
    return str(response.json()["jobs"][0]["job_id"])


def follow(
    client: httpx.Client, job_id: str, started: float, *, show: bool
) -> tuple[dict[str, Any], dict[str, float]]:
    """Poll the job until it ends, printing its stage and progress (on each change of stage,
    else every :data:`PROGRESS_EVERY_S`); the ended job and when each stage was first seen."""
    seen: dict[str, float] = {}
    shown = ("", -1.0)
    deadline = time.monotonic() + 3600
    while True:
        response = client.get(f"/api/rag/jobs/{job_id}")
        response.raise_for_status()
        job = response.json()
        now = time.time() - started
        stage = job["stage"] or job["state"]
        seen.setdefault(stage, now)
        if show and (stage != shown[0] or now - shown[1] >= PROGRESS_EVERY_S):
            progress = job["progress"]
            print(f"  {now:7.1f} s  {stage:10} {progress['done']}/{progress['total']}", flush=True)
            shown = (stage, now)
        if job["finished_at"]:
            return job, seen
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} did not end in an hour; see {LOGS}")
        time.sleep(POLL_S)


def job(made: MadeFile, warm: MadeFile) -> dict[str, Any]:
    """The PDF ``made`` through upload, worker and store, against the bare model."""
    document = extract(made.data, filename=made.name)  # what the worker will read
    chunker = TextChunker(api_chunker_config())
    expected_chunks = len(chunker.chunk(document.text))
    calls = model_batches([{"content": document.text}], chunker, 0)
    bare_model_seconds([["warm up the model"]])  # loads it; not timed
    with (
        launch.scratch_database("bench_files") as url,
        served(url) as (port, env),
        launch.worker(env, LOGS / "files-worker.log") as process,
        launch.client(port, HOST, launch.login(port, HOST, USER, PASSWORD), timeout=300) as api,
    ):
        wait_registered(url, 0, [process])
        for name in (COLLECTION, "warm"):
            launch.set_source(url, "acme", name, True)
        warmed, _ = follow(api, upload(api, "warm", warm.name, warm.data), time.time(), show=False)
        if warmed["state"] != "succeeded":
            raise RuntimeError(f"The warm-up job did not succeed: {warmed['error']}")
        model = [model_pass(calls)]
        print(f"job: {made.name}, {len(made.pages)} pages, {len(made.data) / 1e6:.1f} MB")
        started = time.time()
        job_id = upload(api, COLLECTION, made.name, made.data)
        uploaded = time.time() - started
        ended, seen = follow(api, job_id, started, show=True)
        model.append(model_pass(calls))
        if ended["state"] != "succeeded":
            raise RuntimeError(f"The job did not succeed: {ended['error']}")
        (result,) = ended["results"]
        stored = api.get(f"/api/rag/documents/{result['document_id']}")
        stored.raise_for_status()
    wall = datetime.fromisoformat(ended["finished_at"]).timestamp() - started
    chunks = int(result["chunks_created"])
    if chunks != expected_chunks:
        raise RuntimeError(
            f"The job made {chunks} chunks, the bare model's text {expected_chunks}."
        )
    model_s = statistics.mean(model)
    # Each stage lasts from when a poll first saw it to when one first saw the next (or the
    # job's end): to the poll's half second.
    running = [s for s, _ in sorted(seen.items(), key=lambda i: i[1]) if s not in ENDED]
    bounds = [seen[stage] for stage in running] + [wall]
    stages = {stage: bounds[n + 1] - bounds[n] for n, stage in enumerate(running)}
    return {
        "pages": result["pages"],
        "bytes": len(made.data),
        "chunks": chunks,
        "wall_s": round(wall, 2),
        "upload_s": round(uploaded, 2),
        "stages_s": {stage: round(seconds, 1) for stage, seconds in stages.items()},
        "embedding_stage_overhead": round((stages.get("embedding", 0.0) - model_s) / model_s, 3),
        "chunks_per_s": round(chunks / wall, 2),
        "pages_per_s": round(len(made.pages) / wall, 2),
        "bare_model_s": round(model_s, 2),
        "bare_model_passes_s": [round(m, 2) for m in model],
        "bare_model_chunks_per_s": round(chunks / model_s, 2),
        "overhead": round((wall - model_s) / model_s, 3),
        "chunk_pages": chunk_pages(
            [
                (c["content"], int(c["metadata"]["page_number"]), int(c["metadata"]["page_end"]))
                for c in stored.json()["chunks"]
            ],
            Reference(made.pages),
        ),
    }


# --- Report -----------------------------------------------------------------------------


def table(report: dict[str, Any]) -> str:
    """The report as readable tables."""
    lines = []
    speed_ = report.get("speed")
    if speed_:
        lines += [
            f"Speed, median of {report['rounds']} rounds (pages/s; ratio = ours / LlamaIndex's "
            "SimpleDirectoryReader)",
            f"{'':6} {'files':>5} {'pages':>5} {'ours':>8} {'isolated':>9} {'LlamaIdx':>9} "
            f"{'ours/LI':>8} {'iso/LI':>7} {'CER ours':>9} {'CER LI':>8}",
        ]
        for label, row in speed_.items():
            lines.append(
                f"{label:6} {row['files']:5d} {row['pages']:5d} {row['ours_pages_per_s']:8.1f} "
                f"{row['isolated_pages_per_s']:9.1f} {row['llama_pages_per_s']:9.1f} "
                f"{row['ours_over_llama']:7.2f}x {row['isolated_over_llama']:6.2f}x "
                f"{100 * row['ours_cer']:8.2f}% {100 * row['llama_cer']:7.2f}%"
            )
        lines.append("")
    fid = report.get("fidelity")
    if fid:
        lines += [
            "Fidelity: CER per page of the born-digital PDF (target <= 1 %)",
            f"{'':24} {'pages':>5} {'mean':>8} {'median':>8} {'max':>8} {'worst p.':>8} "
            f"{'> 1 %':>6} {'overall':>8}",
        ]
        rows = [("ours", fid["ours"])]
        rows += [(f"  ours, {kind}", row) for kind, row in fid["ours_by_kind"].items()]
        rows += [("LlamaIndex (pypdf)", fid["llama"])]
        if "ocr" in report:
            rows.append(("ours, OCR (Tesseract)", report["ocr"]))
        for name, row in rows:
            lines.append(
                f"{name:24} {row['pages']:5d} {100 * row['mean']:7.2f}% "
                f"{100 * row['median']:7.2f}% {100 * row['max']:7.2f}% {row['worst_page']:8d} "
                f"{row['over_1pct']:6d} {100 * row['overall']:7.2f}%"
            )
        if "ocr" in report:
            lines.append(f"OCR: {report['ocr']['s_per_page']} s per page")
        lines += ["", "Chunk pages (" + _pages_line(fid["chunks"]) + ")", ""]
    job_ = report.get("job")
    if job_:
        lines += [
            f"Job: a {job_['pages']}-page PDF ({job_['bytes'] / 1e6:.1f} MB) uploaded and "
            f"ingested by one worker: {job_['chunks']} chunks",
            f"{'':22} {'seconds':>8} {'chunks/s':>9} {'pages/s':>8}",
            f"{'bare model':22} {job_['bare_model_s']:8.2f} "
            f"{job_['bare_model_chunks_per_s']:9.2f}    passes: "
            + ", ".join(f"{s:.2f}" for s in job_["bare_model_passes_s"]),
            f"{'job (upload to end)':22} {job_['wall_s']:8.2f} {job_['chunks_per_s']:9.2f} "
            f"{job_['pages_per_s']:8.2f}",
            f"overhead (job - model) / model: {100 * job_['overhead']:.1f} %; the upload took "
            f"{job_['upload_s']:.2f} s",
            "stages (to the poll's 0.5 s): "
            + ", ".join(f"{stage} {at:.1f} s" for stage, at in job_["stages_s"].items())
            + f"; the embedding stage against the bare model: "
            f"{100 * job_['embedding_stage_overhead']:+.1f} %",
            "Stored chunks' pages (" + _pages_line(job_["chunk_pages"]) + ")",
        ]
    return "\n".join(lines)


def _pages_line(found: dict[str, Any]) -> str:
    line = (
        f"{found['chunks']} chunks: {found['right']} right, {found['wrong_page_number']} wrong "
        f"page_number, {found['wrong_page_end']} wrong page_end, {found['not_found']} not found "
        "in the reference"
    )
    for example in found["examples"]:
        line += f"\n  {json.dumps(example, ensure_ascii=False)}"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(PROJECT_ROOT.parent / "shared/eval/scifact"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--pages", type=int, default=300, help="pages of the job's PDF")
    parser.add_argument(
        "--file-pages",
        type=int,
        default=30,
        help="pages of the PDF and of the DOCX, and HTML files, for speed and fidelity",
    )
    parser.add_argument("--rounds", type=int, default=3, help="speed: rounds per reader")
    parser.add_argument("--ocr-pages", type=int, default=3, help="pages rendered and OCR'd")
    parser.add_argument("--no-job", action="store_true", help="skip the job")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    check_llama_readers()

    texts = abstracts(args.data, args.split)
    began = time.perf_counter()
    report: dict[str, Any] = {"rounds": args.rounds}
    pdf = make_pdf(iter(texts), args.file_pages)
    files = {
        "PDF": [pdf],
        "DOCX": [make_docx(iter(texts), args.file_pages)],
        "HTML": [make_html(iter(texts[HTML_ABSTRACTS * n :]), n) for n in range(args.file_pages)],
    }
    with tempfile.TemporaryDirectory(prefix="bench-files-") as folder:
        report["speed"] = speed(files, Path(folder), args.rounds)
        report["fidelity"] = fidelity(pdf, Path(folder))
    if args.ocr_pages:
        report["ocr"] = ocr_fidelity(pdf, min(args.ocr_pages, args.file_pages))
    if not args.no_job:
        # Other abstracts than the job's: the embedding cache must not serve the job's chunks.
        warm = make_pdf(iter(texts[-50:]), 3, name="warm-up.pdf")
        report["job"] = job(make_pdf(iter(texts), args.pages, name="long.pdf"), warm)
    report["seconds"] = round(time.perf_counter() - began, 1)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(table(report))
        print(f"\n(the whole run: {report['seconds']} s)")


if __name__ == "__main__":
    main()
