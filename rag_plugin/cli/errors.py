"""The error ``ragctl``'s client raises for anything the portal did not answer as expected
(``transport.py`` makes one of a failed request or an error answer)."""

from __future__ import annotations

from rag_plugin.exceptions import RagError

__all__ = ["ApiError"]


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
