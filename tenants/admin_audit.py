"""The audit log in the tenant admin (SPEC O6): every model change made here is recorded with
before and after (:class:`AuditedAdmin`), and the tenant's events are browsable, filterable
and exportable as JSON lines, never editable (:class:`AuditEventAdmin`)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from portal.rag import audit
from tenants.models import AuditEvent


def _actor(request: HttpRequest) -> Any:
    return request.user if request.user.is_authenticated else None


def _object_type(obj: Model) -> str:
    return obj._meta.model_name or type(obj).__name__.lower()


class AuditedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Records each add, change and delete of the admin's model: ``<model>.create``,
    ``.update`` (with the fields before and after) and ``.delete`` (with the fields before)."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        before = None
        if change and obj.pk is not None:
            stored = type(obj)._default_manager.filter(pk=obj.pk).first()
            before = audit.snapshot(stored) if stored is not None else None
        super().save_model(request, obj, form, change)
        audit.record(
            f"{_object_type(obj)}.{'update' if change else 'create'}",
            actor=_actor(request),
            object_type=_object_type(obj),
            object_id=str(obj.pk),
            before=before,
            after=audit.snapshot(obj),
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Inline rows (a profile's collections) are part of their parent's change."""
        super().save_related(request, form, formsets, change)
        for formset in formsets:
            if formset.has_changed():
                audit.record(
                    f"{_object_type(form.instance)}.update",
                    actor=_actor(request),
                    object_type=_object_type(form.instance),
                    object_id=str(form.instance.pk),
                    after={
                        formset.model._meta.model_name: [
                            audit.snapshot(row) for row in formset.queryset.all()
                        ]
                    },
                )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        before, pk = audit.snapshot(obj), str(obj.pk)
        super().delete_model(request, obj)
        audit.record(
            f"{_object_type(obj)}.delete",
            actor=_actor(request),
            object_type=_object_type(obj),
            object_id=pk,
            before=before,
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


def _pretty(value: Any) -> SafeString:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class AuditEventAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The tenant's audit log, newest first: read-only, filterable, exportable."""

    list_display = ("at", "actor_name", "action", "object_type", "object_id", "address")
    list_filter = ("action", "object_type")
    search_fields = ("actor_name", "object_id", "request_id", "action")
    date_hierarchy = "at"
    actions = ("export_json_lines",)
    fields = (
        "at",
        "actor_name",
        "action",
        "object_type",
        "object_id",
        "before_display",
        "after_display",
        "request_id",
        "address",
    )
    readonly_fields = fields

    @admin.display(description="before")
    def before_display(self, event: AuditEvent) -> SafeString:
        return _pretty(event.before)

    @admin.display(description="after")
    def after_display(self, event: AuditEvent) -> SafeString:
        return _pretty(event.after)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Export the selected events as JSON lines")
    def export_json_lines(
        self, request: HttpRequest, queryset: QuerySet[AuditEvent]
    ) -> HttpResponse:
        response = StreamingHttpResponse(
            audit.as_json_lines(queryset), content_type="application/x-ndjson"
        )
        response["Content-Disposition"] = 'attachment; filename="audit.jsonl"'
        return response  # type: ignore[return-value]
