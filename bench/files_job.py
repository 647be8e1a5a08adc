"""The job path of bench/files.py: a long PDF uploaded to the portal and ingested by one
worker, against the bare model on the same chunks.

The portal runs under gunicorn on a scratch database with one worker (``manage.py
rag_worker``; the helpers of :mod:`bench.ingest` and :mod:`bench.ingest_jobs`); the job is
polled every half second, its stage and progress printed as it goes, and the stored chunks'
pages are checked against the reference (bench/files.py's docstring says how it is measured).
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime
from typing import Any

import httpx

from bench.files_fidelity import Reference, chunk_pages
from bench.files_make import MadeFile
from bench.ingest import HOST, PASSWORD, model_batches, served, warm_bare_model
from bench.ingest_jobs import LOGS, POLL_S, model_pass, wait_registered
from portal import launch
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.files import extract

COLLECTION = "files"
USER = "alice"
PROGRESS_EVERY_S = 5.0
ENDED = ("succeeded", "failed", "cancelled")


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
    warm_bare_model()
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
