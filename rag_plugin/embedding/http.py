"""The HTTP backend (E4): any OpenAI-compatible ``POST {base}/v1/embeddings`` service."""

from __future__ import annotations

import base64
import binascii
import json
import os
import struct
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

import httpx

from rag_plugin.embedding.base import DEFAULT_BATCH_SIZE, Embedder
from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.exceptions import (
    ConfigurationError,
    EmbeddingAuthError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingNotFoundError,
    EmbeddingRateLimitedError,
)

__all__ = ["API_KEY_ENV", "HttpEmbedder", "parse_embedding_response"]

API_KEY_ENV = "RAG_EMBEDDING_API_KEY"
DEFAULT_TIMEOUT = 30.0
_PROBE_TEXT = "dimension probe"
_DETAIL_LIMIT = 300


class HttpEmbedder(Embedder):
    """Embeds through an OpenAI-compatible embeddings endpoint, one request per batch.

    ``base_url`` is the service root (``http://host:port``; a trailing ``/v1`` is accepted).
    The API key is ``api_key`` or else the ``RAG_EMBEDDING_API_KEY`` environment variable; with
    neither, no ``Authorization`` header is sent. ``dimensions``, when given, is checked against
    every vector; otherwise the first response decides. ``transport`` is httpx's seam for tests
    (``httpx.MockTransport``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dimensions: int | None = None,
        encoding_format: Literal["float", "base64"] | None = None,
        transport: httpx.BaseTransport | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        super().__init__(cache=cache, batch_size=batch_size)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"Embedding base URL {base_url!r} must start with http:// or https://."
            )
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError("The embedding model name must not be empty.")
        if dimensions is not None and (isinstance(dimensions, bool) or dimensions < 1):
            raise ConfigurationError(f"dimensions must be a positive integer, got {dimensions!r}.")
        if timeout <= 0:
            raise ConfigurationError(f"timeout must be positive, got {timeout!r} seconds.")
        root = base_url.rstrip("/")
        self.url = f"{root}/embeddings" if root.endswith("/v1") else f"{root}/v1/embeddings"
        self._model = model
        self.timeout = timeout
        self.encoding_format = encoding_format
        self._known_dimensions = dimensions
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(transport=transport, timeout=timeout, headers=headers)

    @property
    def model_name(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def dimensions(self) -> int:
        """The configured dimension, or the one the service returned (asks it once if unknown)."""
        if self._known_dimensions is None:
            self._known_dimensions = len(self._embed_batch([_PROBE_TEXT])[0])
        return self._known_dimensions

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        # As the seed does: a single input goes as a string, several as an array.
        body: dict[str, Any] = {
            "model": self._model,
            "input": texts[0] if len(texts) == 1 else texts,
        }
        if self.encoding_format is not None:
            body["encoding_format"] = self.encoding_format
        try:
            response = self._client.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(
                f"Embedding request to {self.url} timed out after {self.timeout:g} s."
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"Embedding request to {self.url} failed: {exc}.") from exc
        raise_for_status(response, self.url)
        return parse_embedding_response(response.content)


def raise_for_status(response: httpx.Response, url: str) -> None:
    """Map an unsuccessful status to the error tree: auth, not found, rate limit, input, other."""
    status = response.status_code
    if 200 <= status < 300:
        return
    detail = _error_detail(response)
    where = f"Embedding service {url} answered HTTP {status}"
    if status in (401, 403):
        raise EmbeddingAuthError(f"{where}: the API key was rejected ({detail}).")
    if status == 404:
        raise EmbeddingNotFoundError(f"{where}: service or model not found ({detail}).")
    if status == 429:
        retry = response.headers.get("Retry-After")
        hint = f"; retry after {retry} s" if retry else ""
        raise EmbeddingRateLimitedError(f"{where}: rate limited ({detail}){hint}.")
    if 400 <= status < 500:
        raise EmbeddingInputError(f"{where}: the input was refused ({detail}).")
    raise EmbeddingError(f"{where} ({detail}).")


def parse_embedding_response(content: bytes | str) -> list[list[float]]:
    """Vectors of an OpenAI-style response, ordered by ``index``; base64 is little-endian f32."""
    try:
        payload = json.loads(content)
    except ValueError as exc:
        raise EmbeddingError(f"Invalid embedding response JSON: {exc}") from exc
    data = payload.get("data") if isinstance(payload, Mapping) else None
    if not isinstance(data, list) or not data:
        raise EmbeddingError("Embedding response contained no data")
    items: list[tuple[int, list[float]]] = []
    for position, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise EmbeddingError(f"Invalid embedding response JSON: data[{position}] is no object")
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int):
            raise EmbeddingError(
                f"Invalid embedding response JSON: data[{position}].index is {index!r}"
            )
        items.append((index, _decode_embedding(item.get("embedding"), position)))
    items.sort(key=lambda pair: pair[0])
    return [vector for _index, vector in items]


def _decode_embedding(raw: object, position: int) -> list[float]:
    if isinstance(raw, str):
        try:
            packed = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise EmbeddingError(
                f"Invalid embedding response JSON: data[{position}].embedding is not base64"
            ) from exc
        if len(packed) % 4:
            raise EmbeddingError(
                f"Base64 embedding byte length {len(packed)} is not a multiple of 4"
            )
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))
    if isinstance(raw, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in raw
    ):
        return [float(x) for x in raw]
    raise EmbeddingError(
        f"Invalid embedding response JSON: data[{position}].embedding is neither a list of "
        "numbers nor a base64 string"
    )


def _error_detail(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, Mapping):
        error = payload.get("error", payload.get("detail", payload.get("message")))
        if isinstance(error, Mapping):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:_DETAIL_LIMIT]
    text = response.text.strip()
    return text[:_DETAIL_LIMIT] if text else "no detail"
