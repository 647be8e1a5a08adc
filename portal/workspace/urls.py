"""The workspace's routes, at the root of every tenant host (``workspace:`` names)."""

from django.urls import path

from portal.workspace import auth, chat, collections, documents, search

app_name = "workspace"

urlpatterns = [
    path("", collections.collections_view, name="collections"),
    path("login/", auth.LoginView.as_view(), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("collections/new", collections.collection_create_view, name="collection-create"),
    path("collections/<str:name>/", documents.collection_view, name="collection"),
    path(
        "collections/<str:name>/documents",
        documents.documents_fragment,
        name="collection-documents",
    ),
    path("collections/<str:name>/jobs", documents.jobs_fragment, name="collection-jobs"),
    path("collections/<str:name>/paste", documents.paste_view, name="collection-paste"),
    path(
        "collections/<str:name>/delete",
        collections.collection_delete_view,
        name="collection-delete",
    ),
    path(
        "shared/<str:name>/",
        documents.collection_view,
        {"shared": True},
        name="shared-collection",
    ),
    path(
        "shared/<str:name>/documents",
        documents.documents_fragment,
        {"shared": True},
        name="shared-collection-documents",
    ),
    # A fixed path: the body-size guard gives it the upload limit (portal.middleware).
    path("upload/", documents.upload_view, name="upload"),
    path("documents/<str:document_id>/", documents.document_view, name="document"),
    path("documents/<str:document_id>/file", documents.file_view, name="document-file"),
    path("documents/<str:document_id>/reindex", documents.reindex_view, name="document-reindex"),
    path(
        "documents/<str:document_id>/delete",
        documents.document_delete_view,
        name="document-delete",
    ),
    path(
        "documents/<str:document_id>/chunks/<int:index>/",
        documents.passage_view,
        name="passage",
    ),
    path("search/", search.search_view, name="search"),
    path("chat/", chat.chat_view, name="chat"),
]
