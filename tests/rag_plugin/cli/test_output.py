"""ragctl's line formats for the parts the fake portal does not produce."""

from __future__ import annotations

from pathlib import Path

from rag_plugin.cli.discovery import Document
from rag_plugin.cli.output import dry_run_line, failed_line, search_lines


def test_search_lines_show_typo_correction_rerank_and_normalized_score() -> None:
    response = {
        "results": [
            {
                "id": "u1_0",
                "content": "Hybrid\tsearch\nfuses rankings.",
                "score": 0.016393,
                "normalized_score": 0.5,
                "metadata": {"title": "", "source": "", "start_offset": 5, "end_offset": 34},
            }
        ],
        "total": 1,
        "strategy": "hybrid",
        "reranked": True,
        "duration_ms": 12.5,
        "corrected_query": "hybrid search",
    }

    assert search_lines(response, "hybird search") == [
        "1 result for 'hybird search' (strategy=hybrid, reranked, 12.5 ms)",
        "searched for 'hybrid search' instead (typo correction)",
        "",
        "1. (untitled)  [score 0.016393 (normalized 0.5000)]",
        "   source: (none)  chars 5-34  id u1_0",
        "   Hybrid search fuses rankings.",
    ]


def test_tabs_and_line_breaks_cannot_split_an_audit_line() -> None:
    document = Document(Path("d/a.md"), "a.md", "Tab\there\nand break", "x", 1)

    assert dry_run_line(document) == "d/a.md\tTab here and break\t1 bytes"
    assert failed_line(Path("d/a.md"), "HTTP 500: boom\nTraceback") == (
        "failed\td/a.md\tHTTP 500: boom Traceback"
    )
