"""bench/files.py's report as readable tables (speed, fidelity and OCR, the job)."""

from __future__ import annotations

import json
from typing import Any


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
