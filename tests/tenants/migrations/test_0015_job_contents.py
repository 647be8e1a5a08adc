"""Migration 0015's data step on real rows: the texts of jobs queued before it move from their
payload's documents to ``contents``, in order, and back on reversal; other jobs stay as they
are."""

from __future__ import annotations

import importlib
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from tenants.models import IngestJob

pytestmark = pytest.mark.django_db(transaction=False)

migration = importlib.import_module("tenants.migrations.0015_job_contents")

DOCUMENTS = [
    {"content": "First text, ünïcode.", "source": "a.md", "title": "A", "tags": ["x"]},
    {"content": "Second text.", "source": "b.md", "title": "B", "tags": [], "metadata": {"k": 1}},
]


def _job(user: User, kind: str, payload: dict[str, Any]) -> IngestJob:
    return IngestJob.objects.create(
        id=uuid.uuid4(),
        user=user,
        collection="docs",
        kind=kind,
        payload=payload,
        documents=len(payload.get("documents", [])),
        input_bytes=1,
        max_attempts=3,
    )


def test_queued_texts_move_to_contents_and_back(acme: None) -> None:
    user = User.objects.create(username="m15_alice")
    batch = _job(user, "batch", {"documents": DOCUMENTS, "chunking_strategy": "word"})
    done = _job(user, "document", {})  # succeeded: its payload was emptied
    upload = _job(user, "file", {"title": "Handbook", "tags": []})

    with connection.cursor() as cursor:
        cursor.execute(migration._SPLIT)
    batch.refresh_from_db()
    assert batch.contents == ["First text, ünïcode.", "Second text."]
    assert batch.payload == {
        "documents": [{k: v for k, v in d.items() if k != "content"} for d in DOCUMENTS],
        "chunking_strategy": "word",
    }
    for job, payload in ((done, {}), (upload, {"title": "Handbook", "tags": []})):
        job.refresh_from_db()
        assert (job.payload, job.contents) == (payload, [])

    with connection.cursor() as cursor:
        cursor.execute(migration._JOIN)
    batch.refresh_from_db()
    assert (batch.payload["documents"], batch.contents) == (DOCUMENTS, [])
