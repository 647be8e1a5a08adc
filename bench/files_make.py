"""The files of bench/files.py, made here so that the text of each page is known.

SciFact abstracts (title + text, in corpus order; the few characters DejaVu Serif has no glyph
for left out) laid out as a PDF of one-column, two-column and figure pages with a running
header and a "Page n of N" footer, a DOCX with explicit page breaks and HTML pages with
boilerplate around the article (bench/files.py's docstring says how); each :class:`MadeFile`
carries the reference text of its pages. :func:`scanned` renders a PDF's pages into a PDF of
images only, for OCR.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import docx
import pypdfium2
from docx.enum.text import WD_BREAK
from fontTools.ttLib import TTFont
from fpdf import FPDF
from fpdf.enums import MethodReturnValue
from PIL import Image, ImageDraw

from bench.beir import load_beir

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
OCR_DPI = 300


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
