"""The retrieval playground (SPEC T6): one question retrieved as the context endpoint does,
explained leg by leg, and nothing written.

A tenant admin runs either a retrieval profile, as one user of the tenant (the profile's
own-collection entries are that user's collections, as they would be for that user's API
calls; its collections the user cannot use are skipped), or collections chosen among those
the admin's RAG pages list: the tenant's shared ones and each user's, each of which must
exist and be an enabled source, as on the API. The retrieval is
:func:`~portal.rag.context_retrieval.profile_context` itself with the library's explanation
turned on (:mod:`rag_plugin.explain`), so the context shown is the one the LLM would get; it runs
read-only: no audit event, no embedding cached. What the page shows of it is
:mod:`portal.rag.playground_result`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from portal.rag.context_retrieval import ResolvedRequest, profile_context, resolve_request
from portal.rag.errors import ForbiddenError
from portal.rag.playground_result import PlaygroundResult, playground_result
from portal.rag.runtime import store_for
from portal.rag.scope import owner_for, scope_for
from rag_plugin.exceptions import InvalidInputError, NotFoundError
from rag_plugin.filters import FilterExpression, filters_from_json
from rag_plugin.profiles import RetrievalProfile as LibraryProfile
from rag_plugin.rerank import parse_rerank_mode
from rag_plugin.retrieval import CollectionRef
from tenants.models import RetrievalProfile
from tenants.selectors import enabled_rag_sources

logger = logging.getLogger("portal.rag")

SHARED = "shared"


@dataclass(frozen=True)
class PlaygroundCollection:
    """A collection the playground may search: its name and owner (``None``: shared)."""

    name: str
    user_id: int | None = None
    owner_label: str = "(shared)"

    @property
    def value(self) -> str:
        """How a form names it: ``shared/<name>`` or ``user-<id>/<name>``."""
        owner = SHARED if self.user_id is None else f"user-{self.user_id}"
        return f"{owner}/{self.name}"

    @property
    def label(self) -> str:
        return f"{self.name} — {self.owner_label}"

    @classmethod
    def parse(cls, value: str) -> PlaygroundCollection:
        """The collection a form's :attr:`value` names; raise for anything else."""
        owner, _, name = value.partition("/")
        if owner == SHARED and name:
            return cls(name)
        digits = owner.removeprefix("user-")
        if owner.startswith("user-") and digits.isdigit() and name:
            return cls(name, int(digits), "")
        raise InvalidInputError(
            f"{value!r} names no collection; choose one of the listed collections "
            "(shared/<name> or user-<id>/<name>)."
        )


@dataclass(frozen=True)
class PlaygroundQuery:
    """What the admin asked: a question, a profile (run as a user) or collections, and the
    settings that override the profile's (``None``: as the profile says)."""

    query: str
    profile: str | None = None
    as_user_id: int | None = None
    collections: Sequence[PlaygroundCollection] = ()
    correct_typos: bool = False
    filters_json: str = ""
    rerank: str | None = None
    retrieval_k: int | None = None


def playground_collections() -> list[PlaygroundCollection]:
    """What the playground offers: every owner's collections whose source is enabled,
    the shared ones first, then each user's (by username)."""
    store = store_for(connection.schema_name)  # type: ignore[attr-defined]
    allowed = enabled_rag_sources()
    found = [PlaygroundCollection(c.name) for c in store.list_collections(owner=None)]
    for user in get_user_model().objects.order_by("username"):
        found.extend(
            PlaygroundCollection(c.name, user.pk, user.get_username())
            for c in store.list_collections(owner=owner_for(user))
        )
    return [c for c in found if c.name in allowed]


def playground_profiles() -> list[str]:
    """The names of the tenant's retrieval profiles."""
    return list(RetrievalProfile.objects.order_by("name").values_list("name", flat=True))


def playground_users() -> list[tuple[int, str]]:
    """Each user of the tenant a profile can be run as: id and username."""
    users = get_user_model().objects.order_by("username")
    return [(user.pk, user.get_username()) for user in users]


def playground_run(*, actor: AbstractBaseUser, request: PlaygroundQuery) -> PlaygroundResult:
    """Run ``request`` for the tenant admin ``actor`` and explain it; write nothing."""
    started = time.perf_counter()
    if not getattr(actor, "is_superuser", False):
        raise ForbiddenError("Only tenant admins use the retrieval playground.")
    query = request.query.strip()
    if not query:
        raise InvalidInputError("Type a question to retrieve passages for.")
    if request.profile is not None and request.collections:
        raise InvalidInputError(
            "Choose a retrieval profile or collections, not both: a profile names its own."
        )
    if request.profile is None and not request.collections:
        raise InvalidInputError("Choose a retrieval profile or at least one collection.")
    overrides = _overrides(request)
    as_user = actor
    if request.profile is not None:
        as_user = _user(request.as_user_id) if request.as_user_id is not None else actor
        resolved = resolve_request(user=as_user, profile=request.profile, overrides=overrides)
    else:
        resolved = ResolvedRequest(
            _refs(actor, request.collections), [], LibraryProfile(**overrides), None
        )
    found = profile_context(
        user=actor, query=query, resolved=resolved, explain=True, read_only=True
    )
    result = playground_result(found, resolved.library_profile, as_user, started)
    logger.info(
        "rag.playground",
        extra={
            "event": "rag.playground",
            "user": actor.get_username(),
            "profile": request.profile,
            "collections": [view.label for view in result.collections],
            "chunks": len(result.context_rows),
            "duration_ms": result.duration_ms,
        },
    )
    return result


def _overrides(request: PlaygroundQuery) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if request.correct_typos:
        overrides["correct_typos"] = True
    filters = _filters(request.filters_json)
    if filters is not None:
        overrides["filters"] = filters
    if request.rerank:
        overrides["rerank"] = parse_rerank_mode(request.rerank)
    if request.retrieval_k is not None:
        overrides["retrieval_k"] = request.retrieval_k
    return overrides


def _filters(text: str) -> FilterExpression | None:
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"The filters are not valid JSON ({exc.msg} at line {exc.lineno}, column "
            f'{exc.colno}); write e.g. {{"key": "topic", "operator": "==", "value": "billing"}}.'
        ) from None
    return filters_from_json(data)


def _user(user_id: int) -> AbstractBaseUser:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFoundError(f"User {user_id} not found; choose a user of this tenant.")
    return user


def _refs(actor: AbstractBaseUser, wanted: Sequence[PlaygroundCollection]) -> list[CollectionRef]:
    """Each chosen collection in its owner's scope: it must be allowlisted and exist."""
    refs = []
    for item in wanted:
        owner = actor if item.user_id is None else _user(item.user_id)
        scope = scope_for(user=owner, collection=item.name, shared=item.user_id is None)
        info = scope.store.get_collection(item.name, owner=scope.owner)
        label = item.name if item.user_id is None else f"{item.name} ({owner.get_username()})"
        refs.append(CollectionRef(info, label=label))
    return refs
