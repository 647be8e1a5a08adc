"""The tenant admin's ingestion jobs page (SPEC J3): read-only list and page, cancel, retry.

In-process against the real database: jobs are submitted with the job service (row and queue
entry in one transaction); no worker runs, so a job stays queued unless a test moves it on as
a worker would have.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_tenants.utils import schema_context

from portal.rag.jobs import job_submit
from portal.rag.services import NewDocument
from tenants.models import IngestJob, RagSource

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after"),
]

ACME = "acme.localhost"
JOBS = "/admin/tenants/ingestjob/"
TEXT = (
    "Durable ingestion runs in the background. A worker takes each job from the queue in "
    "PostgreSQL, embeds its chunks and writes the document in one transaction. "
) * 3


@pytest.fixture
def source(acme: None) -> str:
    name = f"src_{uuid.uuid4().hex[:10]}"
    RagSource.objects.create(name=name, enabled=True)
    return name


@pytest.fixture
def admin_user(acme: None) -> User:
    return User.objects.create(username="jobs_admin", is_staff=True, is_superuser=True)


@pytest.fixture
def alice(acme: None) -> User:
    return User.objects.create(username="jobs_alice")


def client_for(user: User) -> Client:
    client = Client(HTTP_HOST=ACME)
    with schema_context("acme"):  # the session lives in the tenant's schema
        client.force_login(user)
    return client


@pytest.fixture
def admin_client(admin_user: User) -> Client:
    return client_for(admin_user)


def submit(user: User, source: str, *, kind: str = "document", shared: bool = False) -> IngestJob:
    return job_submit(
        user=user,
        collection=source,
        documents=[NewDocument(content=TEXT, source="a.md", title="A")],
        kind=kind,
        shared=shared,
    )


def as_worker_left_it(job: IngestJob, **fields: Any) -> IngestJob:
    """Move the row on as a worker would have (no worker runs in these tests)."""
    IngestJob.objects.filter(id=job.id).update(updated_at=timezone.now(), **fields)
    job.refresh_from_db()
    return job


def failed(job: IngestJob) -> IngestJob:
    return as_worker_left_it(
        job,
        state=IngestJob.State.FAILED,
        stage=IngestJob.Stage.EMBEDDING,
        attempts=1,
        error_code="FORBIDDEN",
        error_message="RAG source 'x' is not allowed for this tenant.",
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )


def succeeded(job: IngestJob) -> IngestJob:
    return as_worker_left_it(
        job,
        state=IngestJob.State.SUCCEEDED,
        attempts=1,
        progress_done=3,
        progress_total=3,
        payload={},
        results=[
            {"document_id": "doc-1", "source": "a.md", "chunks_created": 3, "unchanged": False}
        ],
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )


def queue_status(job: IngestJob) -> str:
    """The state of the job's entry in procrastinate's queue (public schema)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status FROM public.procrastinate_jobs WHERE id = %s", [job.queue_job_id]
        )
        row = cursor.fetchone()
    return str(row[0])


def run_action(client: Client, action: str, *jobs: IngestJob) -> list[str]:
    """Post an admin action for the jobs; return the messages of the page it leads to."""
    response = client.post(
        JOBS,
        {"action": action, "_selected_action": [str(job.id) for job in jobs], "index": 0},
        follow=True,
    )
    assert response.status_code == 200
    return [str(message) for message in response.context["messages"]]


def table(page: str) -> list[dict[str, str]]:
    """The change list's rows as {column: text}, in order."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S):
        cells = re.findall(r'<t[hd] class="field-(\w+)[^"]*">(.*?)</t[hd]>', row, flags=re.S)
        if cells:
            rows.append({name: re.sub(r"<[^>]+>", "", text).strip() for name, text in cells})
    return rows


def listed(client: Client, query: str = "") -> list[uuid.UUID]:
    response = client.get(f"{JOBS}?{query}")
    assert response.status_code == 200
    return [job.id for job in response.context["cl"].result_list]


def test_the_list_shows_every_job_of_the_tenant_newest_first(
    admin_client: Client, admin_user: User, alice: User, source: str
) -> None:
    first = submit(alice, source)
    second = failed(submit(alice, source, kind="batch"))
    third = submit(admin_user, source, shared=True)

    response = admin_client.get(JOBS)

    assert [job.id for job in response.context["cl"].result_list] == [
        third.id,
        second.id,
        first.id,
    ]
    rows = table(response.content.decode())
    assert [row["short_id"] for row in rows] == [str(job.id)[:8] for job in (third, second, first)]
    assert {k: v for k, v in rows[1].items() if not k.endswith("_at")} == {
        "short_id": str(second.id)[:8],
        "state": "Failed",
        "stage": "Embedding",
        "progress": "0/0",
        "error_code": "FORBIDDEN",
        "user": "jobs_alice",
        "target": source,
        "kind": "Batch",
        "documents": "1",
        "attempts_display": "1/3",
    }
    assert rows[0]["target"] == f"{source} (shared)"
    assert rows[2]["finished_at"] == "-"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state__exact=failed", ["second"]),
        ("kind__exact=batch", ["second"]),
        ("shared__exact=1", ["third"]),
        ("q=jobs_alice", ["second", "first"]),
        ("q=jobs_admin", ["third"]),
    ],
)
def test_the_list_filters_by_state_kind_and_shared_and_searches_user_names(
    admin_client: Client,
    admin_user: User,
    alice: User,
    source: str,
    query: str,
    expected: list[str],
) -> None:
    jobs = {
        "first": submit(alice, source),
        "second": failed(submit(alice, source, kind="batch")),
        "third": submit(admin_user, source, shared=True),
    }

    assert listed(admin_client, query) == [jobs[name].id for name in expected]


def test_the_list_searches_collection_names(admin_client: Client, alice: User, source: str) -> None:
    other = f"src_{uuid.uuid4().hex[:10]}"
    RagSource.objects.create(name=other, enabled=True)
    mine = submit(alice, source)
    submit(alice, other)

    assert listed(admin_client, f"q={source}") == [mine.id]


def test_the_change_page_shows_every_field_read_only(
    admin_client: Client, alice: User, source: str
) -> None:
    job = as_worker_left_it(
        failed(submit(alice, source)),
        results=[{"document_id": "doc-7", "source": "a.md", "chunks_created": 2}],
    )

    response = admin_client.get(f"{JOBS}{job.id}/change/")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="_save"' not in page
    assert '<input type="text"' not in page
    for text in (
        str(job.id),
        "jobs_alice",
        source,
        "FORBIDDEN",
        "RAG source &#x27;x&#x27; is not allowed for this tenant.",
        "&quot;document_id&quot;: &quot;doc-7&quot;",  # the per-document results
        "&quot;source&quot;: &quot;a.md&quot;",  # the input, named but not its text
        f"&quot;bytes&quot;: {len(TEXT)}",
        str(job.queue_job_id),
    ):
        assert text in page, text
    assert TEXT[:40] not in page


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("page", ["add/", "{id}/delete/"])
def test_nobody_adds_or_deletes_a_job(
    admin_client: Client, alice: User, source: str, method: str, page: str
) -> None:
    job = failed(submit(alice, source))

    response = getattr(admin_client, method)(JOBS + page.format(id=job.id))

    assert response.status_code == 403
    assert IngestJob.objects.filter(id=job.id).exists()


def test_editing_a_job_is_refused(admin_client: Client, alice: User, source: str) -> None:
    job = submit(alice, source)

    response = admin_client.post(f"{JOBS}{job.id}/change/", {"collection": "other"})

    assert response.status_code == 403
    job.refresh_from_db()
    assert job.collection == source


def test_cancel_cancels_a_queued_job_and_refuses_an_ended_one(
    admin_client: Client, alice: User, source: str
) -> None:
    queued = submit(alice, source)
    ended = succeeded(submit(alice, source))

    shown = run_action(admin_client, "cancel_jobs", queued, ended)

    assert shown == [
        f"Job '{ended.id}' has already ended (succeeded); only a queued or running job can be "
        "cancelled.",
        f"Cancelled 1 job(s): {str(queued.id)[:8]}.",
    ]
    queued.refresh_from_db()
    assert (queued.state, queued.cancel_requested) == (IngestJob.State.CANCELLED, True)
    assert queued.finished_at is not None
    assert queue_status(queued) == "cancelled"
    ended.refresh_from_db()
    assert ended.state == IngestJob.State.SUCCEEDED
    entry = LogEntry.objects.get(object_id=str(queued.id))
    assert (entry.user.username, entry.get_change_message()) == (
        "jobs_admin",
        "Cancelled from the admin.",
    )


def test_cancel_asks_a_running_job_to_stop(admin_client: Client, alice: User, source: str) -> None:
    running = as_worker_left_it(
        submit(alice, source), state=IngestJob.State.RUNNING, attempts=1, run_token=uuid.uuid4()
    )

    shown = run_action(admin_client, "cancel_jobs", running)

    assert shown == [f"Asked 1 running job(s) to stop at their next stage: {str(running.id)[:8]}."]
    running.refresh_from_db()
    assert (running.state, running.cancel_requested) == (IngestJob.State.RUNNING, True)


def test_retry_queues_a_failed_job_again_and_refuses_a_queued_one(
    admin_client: Client, alice: User, source: str
) -> None:
    job = failed(submit(alice, source))
    old_queue_job = job.queue_job_id
    queued = submit(alice, source)

    shown = run_action(admin_client, "retry_jobs", job, queued)

    assert shown == [
        f"Job '{queued.id}' is queued; only a failed or cancelled job can be retried.",
        f"Queued 1 job(s) again: {str(job.id)[:8]}.",
    ]
    job.refresh_from_db()
    assert job.state == IngestJob.State.QUEUED
    assert (job.attempts, job.error_code, job.error_message, job.finished_at) == (0, "", "", None)
    assert job.queue_job_id != old_queue_job
    assert queue_status(job) == "todo"
    assert job.user.username == "jobs_alice"  # still the submitter's job


def test_retry_of_a_job_whose_source_is_no_longer_allowed_is_refused_with_the_reason(
    admin_client: Client, alice: User, source: str
) -> None:
    job = failed(submit(alice, source))
    RagSource.objects.filter(name=source).update(enabled=False)

    shown = run_action(admin_client, "retry_jobs", job)

    assert shown == [
        f"Job '{job.id}' was not retried: RAG source '{source}' is not allowed for this "
        "tenant; a tenant admin enables it in the RAG source allowlist."
    ]
    job.refresh_from_db()
    assert job.state == IngestJob.State.FAILED


def test_a_plain_user_is_sent_to_the_login_page(alice: User, source: str) -> None:
    job = submit(alice, source)
    client = client_for(alice)

    for url in (JOBS, f"{JOBS}{job.id}/change/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")
    response = client.post(
        JOBS, {"action": "cancel_jobs", "_selected_action": [str(job.id)], "index": 0}
    )
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == IngestJob.State.QUEUED


def test_staff_without_the_jobs_permissions_cannot_open_the_list(
    acme: None, alice: User, source: str
) -> None:
    staff = User.objects.create(username="jobs_staff", is_staff=True)

    assert client_for(staff).get(JOBS).status_code == 403


def test_staff_who_may_only_view_jobs_see_them_but_cannot_cancel(
    acme: None, alice: User, source: str
) -> None:
    viewer = User.objects.create(username="jobs_viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_ingestjob"))
    job = submit(alice, source)
    client = client_for(viewer)

    response = client.get(JOBS)
    assert [row.id for row in response.context["cl"].result_list] == [job.id]
    assert 'name="action"' not in response.content.decode()  # no action is offered
    shown = run_action(client, "cancel_jobs", job)

    assert shown == []
    job.refresh_from_db()
    assert job.state == IngestJob.State.QUEUED
