"""Real files made by real tools for the extraction tests: PDFs from fpdf2, documents from
python-docx, images from Pillow. Each maker returns the file's bytes and the text a reader
should find in it, so tests compare exact strings."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import docx
from docx.enum.text import WD_BREAK
from docx.oxml import OxmlElement
from docx.shared import Inches
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
HEADER = "Otter Society Annual Report"

PAGE_1 = [
    "Otters live along rivers and coasts across Europe and Asia.",
    "They eat fish, crayfish and frogs, and hunt mostly at night.",
    "Field teams collect infor-",
    "mation on otter numbers every spring.",
]
PAGE_1_TEXT = "\n".join(
    [*PAGE_1[:2], "Field teams collect information on otter numbers every spring."]
)
PAGE_2 = ["The map below shows the survey sites.", "Each dot marks one river."]
TWO_COLUMN_TITLE = "Survey results by region"
LEFT_COLUMN = ["North: 41 otters counted.", "Rivers were clean.", "Numbers rose again."]
RIGHT_COLUMN = ["South: 17 otters counted.", "Two rivers ran dry.", "Numbers fell slightly."]
SCANNED = [
    "Scanned letter from the river warden.",
    "Otters were seen near the old mill.",
    "Please send two more cameras.",
]
PAGE_5 = ["Conclusion", "Otter numbers are stable overall.", "The next survey starts in April."]
REPORT_TITLE = "Otter Survey 2024"
REPORT_AUTHOR = "River Trust"
REPORT_CREATED = datetime(2024, 3, 1, 12, 30, tzinfo=UTC)


def text_image(lines: Sequence[str], *, size: int = 44) -> Image.Image:
    """Black text on white at a size Tesseract reads, as a scanner would produce it."""
    font = ImageFont.truetype(str(FONT), size)
    image = Image.new("L", (1900, 120 + len(lines) * size * 2), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((80, 60 + row * size * 2), line, font=font, fill=0)
    return image


def chart_image() -> Image.Image:
    """A picture with no text in it: dots on a map."""
    image = Image.new("RGB", (400, 200), "white")
    draw = ImageDraw.Draw(image)
    for x, y in ((60, 50), (180, 120), (300, 80)):
        draw.ellipse((x - 10, y - 10, x + 10, y + 10), fill="blue")
    return image


def png(image: Image.Image) -> io.BytesIO:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    buffer.seek(0)
    return buffer


class _Report(FPDF):
    """An fpdf2 document with a running header and a "Page n of N" footer, except on pages
    that hold a scan."""

    scan_pages: set[int]

    def header(self) -> None:
        if self.page_no() in self.scan_pages:
            return
        self.set_font("helvetica", size=9)
        self.cell(0, 6, HEADER, align="C")
        self.ln(14)

    def footer(self) -> None:
        if self.page_no() in self.scan_pages:
            return
        self.set_y(-15)
        self.set_font("helvetica", size=9)
        self.cell(0, 6, f"Page {self.page_no()} of {{nb}}", align="C")


def _lines(pdf: FPDF, lines: Sequence[str], x: float | None = None) -> None:
    for line in lines:
        if x is not None:
            pdf.set_x(x)
        pdf.cell(0 if x is None else 85, 7, line, new_x="LMARGIN", new_y="NEXT")


def report_pdf() -> bytes:
    """Five pages: text with a word hyphenated at a line end; text and a picture; two columns
    (the right one written first); a scan with no text layer; text. Pages other than the
    scan have the running header and footer."""
    pdf = _Report()
    pdf.scan_pages = {4}
    pdf.set_title(REPORT_TITLE)
    pdf.set_author(REPORT_AUTHOR)
    pdf.set_creation_date(REPORT_CREATED)
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    _lines(pdf, PAGE_1)
    pdf.add_page()
    _lines(pdf, PAGE_2)
    pdf.image(png(chart_image()), x=20, w=100)
    pdf.add_page()
    pdf.cell(0, 8, TWO_COLUMN_TITLE, align="C", new_x="LMARGIN", new_y="NEXT")
    top = pdf.get_y() + 4
    pdf.set_y(top)
    _lines(pdf, RIGHT_COLUMN, x=115)
    pdf.set_y(top)
    _lines(pdf, LEFT_COLUMN, x=10)
    pdf.add_page()
    pdf.image(png(text_image(SCANNED)), x=10, y=20, w=190)
    pdf.add_page()
    _lines(pdf, PAGE_5)
    return bytes(pdf.output())


def simple_pdf(pages: Sequence[Sequence[str]], **encryption: str) -> bytes:
    """One page per list of lines, no header or footer; encrypted when passwords are given."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for lines in pages:
        pdf.add_page()
        _lines(pdf, lines)
    if encryption:
        pdf.set_encryption(**encryption)
    return bytes(pdf.output())


def dense_pdf(words_per_line: int = 250) -> bytes:
    """One page of 1 pt text, line on line: ~900,000 characters, whose text layer PDFium
    needs ~100 MB to read (the parser must run out of memory on it, whatever the process had
    free before)."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=1)
    pdf.set_auto_page_break(False)
    pdf.add_page()
    line = " ".join(f"w{j}" for j in range(words_per_line))
    for i in range(int(285 / 0.36)):
        pdf.set_xy(2, 2 + i * 0.36)
        pdf.cell(text=line)
    return bytes(pdf.output())


def scanned_pdf(pages: int) -> bytes:
    """``pages`` pages that are each only a picture of :data:`SCANNED`."""
    pdf = FPDF()
    image = png(text_image(SCANNED)).getvalue()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(image), x=10, y=20, w=190)
    return bytes(pdf.output())


def report_docx(*, rendered_break: bool = True) -> bytes:
    """A Title, an intro, a Heading 1 with a table, an explicit page break, a Heading 2 and
    a picture; with a ``w:lastRenderedPageBreak`` (not a page break) in the intro."""
    document = docx.Document()
    properties = document.core_properties
    properties.title = ""
    properties.author = "Ada Lovelace"
    properties.created = datetime(2023, 5, 6, 7, 8, 9, tzinfo=UTC)
    document.add_heading("Otter census", 0)
    intro = document.add_paragraph("Counted every spring ")
    if rendered_break:
        # Word records where its last layout broke pages; that is no page break.
        intro.add_run().element.append(OxmlElement("w:lastRenderedPageBreak"))
    intro.add_run("by volunteers.")
    document.add_heading("Methods", 1)
    document.add_paragraph("Volunteers walked each river.")
    table = document.add_table(rows=3, cols=3)
    for row, cells in enumerate(
        (("River", "Otters", "Note"), ("Rhine", "12", ""), ("Elbe", "7", "dry summer"))
    ):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    before = document.add_paragraph("Last line of page one.")
    before.add_run().add_break(WD_BREAK.PAGE)
    before.add_run("First line of page two.")
    document.add_heading("Results", 2)
    document.add_paragraph("Numbers rose in the north.")
    document.add_picture(png(chart_image()), width=Inches(2))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


DOCX_PAGE_1 = (
    "Otter census\n\nCounted every spring by volunteers.\n\nMethods\n\n"
    "Volunteers walked each river.\n\nRiver | Otters | Note\nRhine | 12 | \nElbe | 7 | dry summer"
    "\n\nLast line of page one."
)
DOCX_PAGE_2 = "First line of page two.\n\nResults\n\nNumbers rose in the north."


def zip_bomb_docx(member_mib: int) -> bytes:
    """A DOCX-shaped archive with a member of ``member_mib`` MiB of zeros, written in
    streamed chunks so the test never holds it in memory."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document/>")
        with zf.open("word/media/zeros.bin", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(member_mib):
                member.write(chunk)
    return buffer.getvalue()


ARTICLE_HTML = b"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Otters of the Rhine</title></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop</a></nav>
<header><div class="banner">Subscribe to our newsletter today!</div></header>
<main><article>
<h1>River otters</h1>
<p>The Eurasian otter lives along rivers and lakes across Europe. It eats mostly fish and
is active at night.</p>
<h2>Population</h2>
<p>Populations fell sharply in the twentieth century because of pesticides, and have
recovered since the 1980s in most countries.</p>
<table>
<tr><th>Country</th><th>Otters</th></tr>
<tr><td>Germany</td><td>6000</td></tr>
<tr><td>France</td><td>2500</td></tr>
</table>
<p>Conservation continues with river restoration projects in many regions.</p>
</article></main>
<aside>Related: beavers, herons and kingfishers</aside>
<footer>Copyright 2026 Wildlife Site. All rights reserved. <a href="/privacy">Privacy</a></footer>
</body></html>"""
