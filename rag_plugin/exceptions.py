"""The one error tree of ``rag_plugin``.

Every error the library raises on purpose is a :class:`RagError`. Each class carries the
``code`` a client reads (the API's error code, the job's ``error_code``) and nothing about
HTTP: the portal adds the status, by class, in one table (``portal.api.errors``). A subclass
that needs no other code inherits its parent's.
"""

from __future__ import annotations


class RagError(Exception):
    """Root of every error raised by ``rag_plugin``."""

    code = "INTERNAL_ERROR"


class InvalidInputError(RagError, ValueError):
    """A caller passed a value the library cannot use (bad name, parameter or text)."""

    code = "INVALID_INPUT"


class InvalidVectorError(InvalidInputError):
    """An embedding vector is empty, non-finite or of the wrong dimension."""


class DimensionMismatchError(InvalidVectorError):
    """A vector's dimension differs from the collection's dimension."""

    def __init__(self, expected: int, got: int) -> None:
        super().__init__(f"expected {expected} dimensions, got {got}")
        self.expected = expected
        self.got = got


# The issue and SPEC use the short name; both spellings refer to one class.
DimensionMismatch = DimensionMismatchError


class ConfigurationError(RagError):
    """The library is configured in a way that cannot work (unknown model, bad settings)."""

    code = "CONFIGURATION_ERROR"


class NotFoundError(RagError, LookupError):
    """A named thing (collection, document) does not exist."""

    code = "NOT_FOUND"


class CollectionNotFoundError(NotFoundError):
    """The collection does not exist for this owner."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Collection '{name}' not found: ingest a document into it to create it, or list "
            "the collections to see which exist."
        )
        self.name = name


class DocumentNotFoundError(NotFoundError):
    """The document does not exist in this collection."""

    def __init__(self, document_id: str) -> None:
        super().__init__(
            f"Document '{document_id}' not found: it was deleted, or it is in a collection "
            "you cannot read; list a collection's documents to see their ids."
        )
        self.document_id = document_id


class CollectionExistsError(RagError):
    """A collection of that name already exists for this owner (the caller's request
    conflicts with what is stored; nothing is misconfigured)."""

    code = "CONFLICT"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Collection '{name}' already exists: use it, or delete it first to make it anew."
        )
        self.name = name


class QuotaExceededError(RagError):
    """A write would take the owner's or the store's usage past a limit (SPEC O7); nothing
    was written."""

    code = "QUOTA_EXCEEDED"

    def __init__(self, scope: str, resource: str, limit: int, usage: int, adding: int) -> None:
        super().__init__(
            f"Quota exceeded: the {scope} may store at most {limit} {resource}; {usage} are "
            f"stored and this write adds {adding}. Delete some, or ask an admin to raise the "
            "limit."
        )
        self.scope = scope
        self.resource = resource
        self.limit = limit
        self.usage = usage
        self.adding = adding


class StoreError(RagError):
    """The storage backend failed (database error, unreadable files)."""

    code = "DATABASE_ERROR"


class EmbeddingError(RagError):
    """The embedding backend failed to produce vectors.

    Its subclasses say how, for the caller's retry decision; to a client each is the same
    ``EXTERNAL_SERVICE_ERROR``: a service behind the API failed, not the client's request
    (the service rejecting *our* key is no ``AUTHENTICATION_FAILED`` of the client's)."""

    code = "EXTERNAL_SERVICE_ERROR"


class EmbeddingAuthError(EmbeddingError):
    """The embedding service rejected our credentials (HTTP 401/403)."""


class EmbeddingNotFoundError(EmbeddingError):
    """The embedding service or model was not found (HTTP 404)."""


class EmbeddingRateLimitedError(EmbeddingError):
    """The embedding service asked us to slow down (HTTP 429)."""


class EmbeddingInputError(EmbeddingError, InvalidInputError):
    """The embedding service refused our input (other HTTP 4xx)."""


class ModelLoadError(ConfigurationError):
    """No embedding model in the fallback chain could be loaded."""


class UnsupportedFileTypeError(InvalidInputError):
    """A file's content is none of the types the extractors read."""

    code = "UNSUPPORTED_FILE_TYPE"


class EncryptedDocumentError(InvalidInputError):
    """A document needs a password to be read."""

    code = "ENCRYPTED_DOCUMENT"


class CorruptDocumentError(InvalidInputError):
    """A document's parser could not read it (damaged or truncated file, or a parser that
    crashed or ran out of memory on it)."""

    code = "CORRUPT_DOCUMENT"


class DecompressionBombError(CorruptDocumentError):
    """A compressed document would expand far beyond any real document of its size."""

    code = "DECOMPRESSION_BOMB"


class FileTooLargeError(InvalidInputError):
    """A file has more bytes than the extraction limits allow."""

    code = "FILE_TOO_LARGE"


class TooManyPagesError(InvalidInputError):
    """A document has more pages than the extraction limits allow."""

    code = "TOO_MANY_PAGES"


class ExtractionTimeoutError(InvalidInputError):
    """Extracting a document's text took longer than the extraction limits allow."""

    code = "EXTRACTION_TIMEOUT"
