"""Job reads leave the job's input out: a text job's payload and contents hold its documents'
whole text, megabytes, which a list, a status poll or the admin's list never shows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.rag import selectors
from tests.portal.rag.job_helpers import TEXT, text_job

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after", "fake_embedder"),
]


def test_listing_and_getting_jobs_read_no_payload(acme: None, source: str) -> None:
    alice = User.objects.create(username="sel_alice")
    job = text_job(alice, source)

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
