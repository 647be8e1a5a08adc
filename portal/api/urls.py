"""Routes of the REST API (mounted under /api/ on every tenant host)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.api import chat, context, documents, files, ingest, jobs, keys, login, search

urlpatterns = [
    path("auth/login", login.LoginView.as_view(), name="api-login"),
    path("auth/keys", keys.KeyListView.as_view(), name="api-keys"),
    path("auth/keys/<str:key_id>", keys.KeyView.as_view(), name="api-key"),
    path("rag/ingest", ingest.IngestView.as_view(), name="api-ingest"),
    path("rag/ingest/batch", ingest.IngestBatchView.as_view(), name="api-ingest-batch"),
    path("rag/search", search.SearchView.as_view(), name="api-search"),
    path("rag/collections", documents.CollectionListView.as_view(), name="api-collections"),
    path("rag/collection", documents.CollectionDeleteView.as_view(), name="api-collection-delete"),
    path(
        "rag/collections/<str:collection>/documents",
        documents.DocumentListView.as_view(),
        name="api-documents",
    ),
    path("rag/documents/<str:document_id>", documents.DocumentView.as_view(), name="api-document"),
    path(
        "rag/documents/<str:document_id>/file",
        files.DocumentFileView.as_view(),
        name="api-document-file",
    ),
    path(
        "rag/documents/<str:document_id>/reindex",
        files.DocumentReindexView.as_view(),
        name="api-document-reindex",
    ),
    path("rag/files", files.FileUploadView.as_view(), name="api-files"),
    path("rag/jobs", jobs.JobListView.as_view(), name="api-jobs"),
    path("rag/jobs/<str:job_id>", jobs.JobView.as_view(), name="api-job"),
    path("rag/jobs/<str:job_id>/cancel", jobs.JobCancelView.as_view(), name="api-job-cancel"),
    path("rag/jobs/<str:job_id>/retry", jobs.JobRetryView.as_view(), name="api-job-retry"),
    path("rag/jobs/<str:job_id>/events", jobs.JobEventsView.as_view(), name="api-job-events"),
    path("rag/context", context.ContextView.as_view(), name="api-context"),
    path("rag/answer", context.AnswerView.as_view(), name="api-answer"),
    path("rag/chat", chat.ChatView.as_view(), name="api-chat"),
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
