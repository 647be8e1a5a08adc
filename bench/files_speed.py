"""Speed of bench/files.py: pages/s of our extraction (in process and isolated) and
LlamaIndex's readers over the same files, and each one's CER on the whole file.

``rounds`` rounds after one that warms them up, the three readers in a different order each
round; the median round counts.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.files_fidelity import cer, error_rate
from bench.files_make import MadeFile
from bench.files_readers import children_without_main, llama_read, read_isolated, read_ours
from rag_plugin.files import ExtractedDocument, extract_isolated


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
            "ours_cer": error_rate(
                [cer(d.text, r) for d, r in zip(ours_docs, references, strict=True)]
            ),
            "llama_cer": error_rate(
                [cer(t, r) for t, r in zip(llama_texts, references, strict=True)]
            ),
        }
    return report
