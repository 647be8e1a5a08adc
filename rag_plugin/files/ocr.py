"""Text for pages that are only a picture of text, from Tesseract where it is installed.

Tesseract is a program, not a Python package: where it is missing, callers mark the page
``needs_ocr`` rather than return it empty as if it had no words.
"""

from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pypdfium2
    from PIL import Image

logger = logging.getLogger(__name__)

TESSERACT = "tesseract"
LANGUAGE = "eng"
DPI = 300
"""The resolution pages are rendered at for OCR: Tesseract reads body text best at 300 dpi."""
MAX_SIDE_PX = 5000
"""No rendered page is larger than this on either side, however large the page claims to be."""


def tesseract_available() -> bool:
    """Whether the ``tesseract`` program is on ``PATH``."""
    return shutil.which(TESSERACT) is not None


def render_page(page: pypdfium2.PdfPage) -> Image.Image:
    """The page as a greyscale image at :data:`DPI`, within :data:`MAX_SIDE_PX`."""
    width, height = page.get_size()
    scale = min(DPI / 72, MAX_SIDE_PX / max(width, height, 1.0))
    image: Image.Image = page.render(scale=scale, grayscale=True).to_pil()
    return image


def recognise(image: Image.Image) -> str | None:
    """The text Tesseract reads in ``image``, or None when Tesseract failed on it (logged).

    Tesseract ends its output with a form feed; it is removed.
    """
    import pytesseract

    try:
        text: str = pytesseract.image_to_string(image, lang=LANGUAGE)
    except (pytesseract.TesseractError, RuntimeError, OSError) as exc:
        logger.warning("Tesseract failed on a page: %s", exc)
        return None
    return text.replace("\f", "").strip()
