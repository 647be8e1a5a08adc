"""The search page: a query over the collections the user picks, with the API's strategies,
typo correction, rerank and metadata filters; each hit is shown as the exact passage in the
text around it, with its page, and opens at its page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from portal.rag import selectors
from portal.rag.passages import Passage, passage
from portal.workspace.access import member, user_of
from portal.workspace.forms import SearchForm
from rag_plugin.exceptions import RagError
from rag_plugin.filters import FilterExpression, filters_from_json
from rag_plugin.outcome import SearchHit, SearchOutcome
from rag_plugin.rerank import RerankMode
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo


@dataclass(frozen=True)
class Choice:
    """A collection the user may search: its form value (``mine:docs``, ``shared:faq``)."""

    info: CollectionInfo
    shared: bool

    @property
    def value(self) -> str:
        return f"{'shared' if self.shared else 'mine'}:{self.info.name}"


@dataclass(frozen=True)
class Result:
    """One hit: the chunk's passage in its text, and its score."""

    hit: SearchHit
    passage: Passage


@dataclass(frozen=True)
class CollectionResults:
    """What one collection answered: its hits and corrections, or why it could not."""

    choice: Choice
    outcome: SearchOutcome | None
    results: list[Result]
    error: str = ""


def collection_choices(user: AbstractBaseUser) -> list[Choice]:
    """The collections the user may search or ask: their own, then the tenant's shared ones."""
    return [Choice(info, False) for info in selectors.collection_list(user=user)] + [
        Choice(info, True) for info in selectors.collection_list(user=user, shared=True)
    ]


def _filters(data: dict[str, Any]) -> FilterExpression | None:
    """The form's tag and metadata key/value as a filter expression (validated by the
    library, as the API's ``filters``); a number-like value matches as text or number."""
    conditions: list[dict[str, Any]] = []
    if data.get("tag"):
        conditions.append({"key": "tags", "operator": "contains", "value": data["tag"]})
    if data.get("key"):
        value = data["value"]
        values: list[Any] = [value]
        if value.lstrip("-").isdigit():
            values.append(int(value))
        conditions.append({"key": data["key"], "operator": "in", "value": values})
    if not conditions:
        return None
    return filters_from_json({"condition": "and", "filters": conditions})


def _results(user: AbstractBaseUser, choice: Choice, outcome: SearchOutcome) -> list[Result]:
    chunks: dict[str, list[ChunkRecord]] = {}
    results = []
    for hit in outcome.hits:
        document_id = hit.chunk.document_id
        if document_id not in chunks:
            chunks[document_id] = selectors.collection_document_chunks(
                user=user,
                collection=choice.info.name,
                document_id=document_id,
                shared=choice.shared,
            )
        results.append(Result(hit, passage(chunks[document_id], hit.chunk.index)))
    return results


def _search(
    user: AbstractBaseUser, choice: Choice, data: dict[str, Any], filters: FilterExpression | None
) -> CollectionResults:
    try:
        outcome = selectors.rag_search(
            user=user,
            collection=choice.info.name,
            shared=choice.shared,
            query=data["q"],
            limit=data.get("limit") or 10,
            strategy=SearchStrategy.parse(data.get("strategy") or SearchStrategy.HYBRID),
            threshold=0.0,
            correct_typos=bool(data.get("correct_typos")),
            filters=filters,
            rerank=RerankMode(data.get("rerank") or RerankMode.OFF),
        )
        return CollectionResults(choice, outcome, _results(user, choice, outcome))
    except RagError as exc:
        return CollectionResults(choice, None, [], str(exc))


@require_GET
@member
def search_view(request: HttpRequest) -> HttpResponse:
    """The search form and, once a query is sent, the hits of each chosen collection."""
    user = user_of(request)
    choices = collection_choices(user)
    picked = set(request.GET.getlist("c"))
    form = SearchForm(request.GET or None)
    answered: list[CollectionResults] = []
    if form.is_bound and form.is_valid():
        chosen = [choice for choice in choices if choice.value in picked]
        filters = None
        try:
            filters = _filters(form.cleaned_data)
        except RagError as exc:
            form.add_error("value", str(exc))
        if not chosen:
            form.add_error(None, "Choose at least one collection to search.")
        elif not form.errors:
            answered = [_search(user, choice, form.cleaned_data, filters) for choice in chosen]
    return render(
        request,
        "workspace/search.html",
        {
            "form": form,
            "choices": choices,
            # Every collection is ticked until the user has sent a choice of their own.
            "picked": picked if form.is_bound else {choice.value for choice in choices},
            "answered": answered,
        },
        status=400 if form.is_bound and form.errors else 200,
    )
