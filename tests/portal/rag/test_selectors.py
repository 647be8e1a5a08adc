"""Job reads leave the job's input out: a text job's payload and contents hold its documents'
whole text, megabytes, which a list, a status poll or the admin's list never shows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.rag import selectors
from portal.rag.jobs import job_submit
from portal.rag.services import NewDocument
from tenants.models import IngestJob

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after", "fake_embedder"),
]

TEXT = "Refunds are paid within thirty days of the request, by the same means of payment."


@pytest.fixture
def alice(acme: None) -> User:
    return User.objects.create(username="sel_alice")


def test_listing_and_getting_jobs_read_no_payload(alice: User, source: str) -> None:
    job = job_submit(
        user=alice,
        collection=source,
        documents=[NewDocument(content=TEXT, source="refunds.md", title="Refunds")],
        kind=IngestJob.Kind.DOCUMENT,
    )

    with CaptureQueriesContext(connection) as queries:
        listed, total = selectors.job_list(user=alice)
        found = selectors.job_get(user=alice, job_id=str(job.id))

    reads = [q["sql"] for q in queries.captured_queries if 'FROM "tenants_ingestjob"' in q["sql"]]
    assert reads
    assert not [sql for sql in reads if '"payload"' in sql or '"contents"' in sql], reads
    assert (total, [j.id for j in listed], found.id) == (1, [job.id], job.id)
    # Asked for, it is still there (one more read).
    assert found.contents == [TEXT]
    assert found.payload["documents"][0]["source"] == "refunds.md"
