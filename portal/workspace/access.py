"""Who may open a workspace page, and how the business layer's refusals are shown."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse_lazy

from portal.api.errors import rag_status
from rag_plugin.exceptions import RagError

View = Callable[..., HttpResponse]


def member(view: View) -> View:
    """The view for logged-in users of the tenant (others go to the login page); a refusal
    of the business layer it lets through is answered with :func:`refused`."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except RagError as exc:
            return refused(request, exc)

    return login_required(wrapped, login_url=reverse_lazy("workspace:login"))


def user_of(request: HttpRequest) -> AbstractBaseUser:
    # @member has run: the user is a logged-in account of this tenant.
    return cast(AbstractBaseUser, request.user)


def is_fragment(request: HttpRequest) -> bool:
    """Whether htmx asked for the page's fragment rather than the whole page."""
    return request.headers.get("HX-Request") == "true"


def refused(request: HttpRequest, exc: RagError) -> HttpResponse:
    """The error page (or fragment) with the error's own words and the API's status: 404 for
    what the user cannot see, 403 for a source the allowlist lacks, 400 for bad input."""
    template = "workspace/_error.html" if is_fragment(request) else "workspace/error.html"
    return render(
        request, template, {"message": str(exc), "code": exc.code}, status=rag_status(exc)
    )
