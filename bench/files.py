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
  :func:`bench.files_readers.children_without_main`.)
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

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.files_fidelity import fidelity, ocr_fidelity
from bench.files_job import job
from bench.files_make import HTML_ABSTRACTS, abstracts, make_docx, make_html, make_pdf
from bench.files_readers import check_llama_readers
from bench.files_report import table
from bench.files_speed import speed
from portal.embedded_db import PROJECT_ROOT


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
