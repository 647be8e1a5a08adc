"""What a run writes to its job's row (portal/rag/job_runner): the stage the claim sets, and
one write per change of stage for a job faster than the progress interval."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.rag import job_runner
from tenants.models import IngestJob
from tests.portal.rag.job_helpers import text_job

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after", "fake_embedder"),
]


@pytest.fixture
def alice(acme: None) -> User:
    return User.objects.create(username="jp_alice")


def test_a_text_job_is_claimed_at_the_embedding_stage(
    alice: User, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = text_job(alice, source)
    claimed: list[tuple[str, str]] = []
    monkeypatch.setattr(
        job_runner.JobRun, "execute", lambda run: claimed.append((run.job.state, run.job.stage))
    )

    job_runner.run_job(job.id, queue_job_id=job.queue_job_id)

    assert claimed == [(IngestJob.State.RUNNING, IngestJob.Stage.EMBEDDING)]


def test_a_fast_text_job_writes_its_row_at_the_claim_the_writing_stage_and_the_end(
    alice: User, source: str
) -> None:
    job = text_job(alice, source)

    with CaptureQueriesContext(connection) as queries:
        job_runner.run_job(job.id, queue_job_id=job.queue_job_id)

    updates = [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].startswith('UPDATE "tenants_ingestjob"')
    ]
    assert len(updates) == 3, updates  # no "embedding 0/0", no "embedding 1/1" of its own
    assert "'writing'" in updates[1]
    job.refresh_from_db()
    assert (job.state, job.progress_done, job.progress_total) == ("succeeded", 1, 1)
