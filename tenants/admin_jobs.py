"""The tenant admin's view of ingestion jobs (SPEC J1, J3): read every job, cancel, retry.

The page is read-only: a job's fields are written by its worker and by the job services, never
by a form. The two actions call those services (:mod:`portal.rag.jobs`) as the acting admin,
because they also take the job out of procrastinate's queue or put it back in; writing the
row here would leave the queue behind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from portal.rag.jobs import job_cancel, job_retry
from rag_plugin.exceptions import RagError
from tenants.models import IngestJob

REFUSALS_SHOWN = 10
"""An action names at most this many refused jobs, one message each, then counts the rest."""


def short_id(job: IngestJob) -> str:
    return str(job.id)[:8]


def _pretty(value: Any) -> SafeString:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class IngestJobAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every ingestion job of the tenant, newest first; cancel and retry as admin actions.

    Nobody adds, edits or deletes a job here. Deleting is refused even for an ended job: the
    job list is the tenant's record of who ingested what (the REST API cannot delete one
    either), and the bulk delete action would not ask per job, so a running job could go.
    """

    list_display = (
        "short_id",
        "state",
        "stage",
        "progress",
        "error_code",
        "user",
        "target",
        "kind",
        "documents",
        "attempts_display",
        "created_at",
        "finished_at",
    )
    list_filter = ("state", "kind", "shared")
    search_fields = ("collection", "user__username")
    list_select_related = ("user",)
    ordering = ("-created_at", "id")
    actions = ("cancel_jobs", "retry_jobs")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "state",
                    "stage",
                    "progress",
                    "attempts_display",
                    "cancel_requested",
                )
            },
        ),
        ("Input", {"fields": ("user", "collection", "shared", "kind", "documents", "input_bytes")}),
        ("Input documents", {"fields": ("input_summary",), "classes": ("collapse",)}),
        ("Outcome", {"fields": ("error_code", "error_message", "results_display")}),
        ("Times", {"fields": ("created_at", "started_at", "finished_at", "updated_at")}),
        ("Queue", {"fields": ("queue_job_id", "run_token"), "classes": ("collapse",)}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[IngestJob]:
        # The input (megabytes for a text job) is read only by the page that shows it.
        return super().get_queryset(request).defer(*IngestJob.INPUT_FIELDS)

    @admin.display(description="job")
    def short_id(self, job: IngestJob) -> str:
        return short_id(job)

    @admin.display(description="progress")
    def progress(self, job: IngestJob) -> str:
        return f"{job.progress_done}/{job.progress_total}"

    @admin.display(description="collection", ordering="collection")
    def target(self, job: IngestJob) -> str:
        return f"{job.collection} (shared)" if job.shared else job.collection

    @admin.display(description="attempts")
    def attempts_display(self, job: IngestJob) -> str:
        return f"{job.attempts}/{job.max_attempts}"

    @admin.display(description="documents (content left out)")
    def input_summary(self, job: IngestJob) -> SafeString | str:
        # A job's content can be megabytes: the page names each document, not its text.
        documents = job.payload.get("documents")
        if not documents:
            return "— (emptied once the job succeeded)"
        return _pretty(
            {
                "chunking_strategy": job.payload.get("chunking_strategy"),
                "documents": [
                    {
                        "title": document.get("title", ""),
                        "source": document.get("source", ""),
                        "bytes": len(content.encode("utf-8")),
                        "tags": document.get("tags", []),
                        "metadata": document.get("metadata", {}),
                    }
                    for document, content in zip(documents, job.contents, strict=True)
                ],
            }
        )

    @admin.display(description="results (one per document)")
    def results_display(self, job: IngestJob) -> SafeString | str:
        return _pretty(job.results) if job.results else "—"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: IngestJob | None = None) -> bool:
        # Without it the change page shows every field read-only, with no save button.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: IngestJob | None = None) -> bool:
        return False

    def has_control_permission(self, request: HttpRequest) -> bool:
        """Cancelling and retrying change a job's state: they need the model's change
        permission (every superuser has it), though no field of a job is editable."""
        return request.user.has_perm("tenants.change_ingestjob")

    @admin.action(description="Cancel selected jobs", permissions=["control"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[IngestJob]) -> None:
        done = self._each(request, queryset, job_cancel, "cancelled")
        cancelled = [job for job in done if job.state == IngestJob.State.CANCELLED]
        stopping = [job for job in done if job.state != IngestJob.State.CANCELLED]
        if cancelled:
            self._report(request, f"Cancelled {len(cancelled)} job(s)", cancelled)
        if stopping:
            self._report(
                request,
                f"Asked {len(stopping)} running job(s) to stop at their next stage",
                stopping,
            )

    @admin.action(description="Retry selected jobs", permissions=["control"])
    def retry_jobs(self, request: HttpRequest, queryset: QuerySet[IngestJob]) -> None:
        done = self._each(request, queryset, job_retry, "retried")
        if done:
            self._report(request, f"Queued {len(done)} job(s) again", done)

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet[IngestJob],
        service: Callable[..., IngestJob],
        verb: str,
    ) -> list[IngestJob]:
        """Call ``service`` for each selected job as the acting admin; report each refusal."""
        user = request.user
        if not isinstance(user, AbstractBaseUser):  # the admin site lets only staff in
            raise PermissionDenied("Only tenant admins act on ingestion jobs.")
        done: list[IngestJob] = []
        refused = 0
        for job in queryset.order_by("-created_at", "id"):
            try:
                done.append(service(user=user, job_id=str(job.id)))
            except RagError as exc:
                refused += 1
                if refused <= REFUSALS_SHOWN:
                    messages.error(request, _refusal(job, str(exc), verb))
                continue
            self.log_change(request, job, f"{verb.capitalize()} from the admin.")
        if refused > REFUSALS_SHOWN:
            messages.error(request, f"{refused - REFUSALS_SHOWN} more jobs were not {verb}.")
        return done

    def _report(self, request: HttpRequest, lead: str, jobs: list[IngestJob]) -> None:
        ids = ", ".join(short_id(job) for job in jobs)
        self.message_user(request, f"{lead}: {ids}.", messages.SUCCESS)


def _refusal(job: IngestJob, detail: str, verb: str) -> str:
    """The service's reason, naming the job if the reason does not already."""
    return detail if str(job.id) in detail else f"Job '{job.id}' was not {verb}: {detail}"
