"""The error ``ragctl``'s client raises for anything the portal did not answer as expected,
and how a failed request or an error answer becomes one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from rag_plugin.exceptions import RagError

__all__ = ["ApiError", "error_details", "reaching"]


class ApiError(RagError):
    """The server could not be reached, or answered a request with an error status.

    ``server_code``: the API's error code from the answer, None when it had none (``code``
    then stays the class's generic one).
    """

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message if status is None else f"HTTP {status}: {message}")
        self.message = message
        self.status = status
        self.server_code = code
        if code is not None:
            self.code = code


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Turn a request's transport failures (no connection, no answer in time) into ApiError."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ApiError(f"no answer from {url} in time ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise ApiError(f"could not reach {url}: {exc}") from exc


def error_details(response: httpx.Response) -> tuple[str, str | None]:
    """The API's ``{"error", "code"}`` body, or the start of whatever else came back."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        message = body.get("error", body.get("detail"))
        code = body.get("code")
        request_id = body.get("request_id")
        if isinstance(message, str) and message:
            if isinstance(request_id, str) and request_id:
                message = f"{message} (request id {request_id})"  # what the server logged
            return message, code if isinstance(code, str) else None
    text = " ".join(response.text.split())[:200]
    return text or response.reason_phrase, None
