"""Serializer fields that refuse values of the wrong JSON type instead of coercing them.

DRF's stock fields turn ``123`` into ``"123"``, ``"10"`` into ``10`` and ``"yes"`` into
``True``; for an API whose contract says which JSON type each field has, a wrong type is a
client bug worth a 400 that names the field.
"""

from __future__ import annotations

import json
import math
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    MAX_DEPTH,
    MAX_FILTERS,
    FilterExpression,
    FilterOperator,
    filters_from_json,
)
from rag_plugin.lexical.analyzers import tokenize
from rag_plugin.rerank import RerankMode, parse_rerank_mode


class StrictCharField(serializers.CharField):
    """A JSON string of valid Unicode (DRF already refuses NUL characters)."""

    default_error_messages = {
        "invalid": "Must be a string.",
        "surrogates": "Must be valid Unicode text (found an unpaired surrogate).",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # DRF's own surrogate check walks the text a character at a time in Python (≈ 70 ms
        # for a 1 MB document); the UTF-8 encode below finds the same in C.
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitSurrogateCharactersValidator)
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            self.fail("surrogates")
        return super().to_internal_value(data)


class NameField(StrictCharField):
    """One of a fixed set of names. The serializer's ``validate_<field>`` parses it (any case,
    with aliases) and words the error; ``names`` is what the OpenAPI schema lists."""

    def __init__(self, *, names: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.names = names


BIGINT_MAX = 2**63 - 1
"""The largest integer PostgreSQL's ``bigint`` holds: no integer field accepts more."""


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer (not a bool, not a string), by default within PostgreSQL's bigint.

    As JSON Schema counts them, a number with no fraction is an integer: ``5.0`` is taken as
    ``5`` (a client that writes every number as a float sends it so), ``5.5`` is refused."""

    default_error_messages = {"invalid": "Must be an integer."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -BIGINT_MAX)
        kwargs.setdefault("max_value", BIGINT_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and math.isfinite(data) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number that is a finite float (an integer too large for one is refused)."""

    default_error_messages = {"invalid": "Must be a finite number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        try:
            value = float(data)
        except OverflowError:  # an int of 400 digits: float() refuses it
            self.fail("invalid")
        if not math.isfinite(value):
            self.fail("invalid")
        return super().to_internal_value(value)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class QueryBooleanField(serializers.BooleanField):
    """A query-string flag: exactly ``true`` or ``false``, the OpenAPI boolean's two spellings
    (DRF's own field also takes ``1``, ``yes``, ``on``, ... which the schema cannot say)."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if data not in ("true", "false"):
            self.fail("invalid")
        return bool(data == "true")


class BoundedListField(serializers.ListField):
    """A list whose length is checked before its items are: 100,000 items are refused at
    once instead of validated one by one first. ``too_long`` is the message, with
    ``{max_length}`` and ``{length}`` filled in."""

    def __init__(self, *, too_long: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if too_long is not None:
            self.error_messages["max_length"] = too_long

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length, length=len(data))
        return super().to_internal_value(data)


class LengthField(serializers.IntegerField):
    """An output count: how many items the attribute it reads holds."""

    def to_representation(self, value: Any) -> int:
        return len(value)


class QueryField(StrictCharField):
    """A search query: at most ``max_length`` characters and ``max_words`` words."""

    def __init__(self, *, max_words: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_words = max_words

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        # Whitespace words, or the seed tokens the lexical legs look up ("aa.ab.ac" is one
        # word but three terms), whichever is more.
        words = max(len(value.split()), len(tokenize(value)))
        if words > self.max_words:
            raise serializers.ValidationError(
                f"The query has {words} words; the limit is {self.max_words} (RAG_MAX_QUERY_WORDS)."
            )
        return value


class InputSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A request body: a JSON object whose keys are all known fields."""

    unknown_key = "Unknown field"
    # Optional fields of which a body must give at least one (any_of) or exactly one
    # (one_of): the serializer's validate() enforces it, portal.api.schema documents it.
    any_of: tuple[str, ...] = ()
    one_of: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["Request body must be a JSON object."]}
            )
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {unknown[0]: [f"{self.unknown_key}. Allowed: {', '.join(sorted(self.fields))}."]}
            )
        return super().to_internal_value(data)


class QueryInput(InputSerializer):
    """A URL's query parameters: each one known (a misspelt ``?sahred=true`` is refused, not
    ignored)."""

    unknown_key = "Unknown query parameter"


FILTER_SCHEMA: dict[str, Any] = {
    # The grammar is recursive, so it lives in components (portal.api.schema.json_components).
    "allOf": [{"$ref": "#/components/schemas/MetadataFilters"}],
    "description": (
        "Metadata filters, applied before ranking in every leg: a group "
        '`{"condition": "and"|"or"|"not", "filters": [...]}` (nested at most '
        f"{MAX_DEPTH} deep, {MAX_FILTERS} filters in all), a filter "
        '`{"key": ..., "operator": ..., "value": ...}` with an operator of '
        + ", ".join(f"`{operator.value}`" for operator in FilterOperator)
        + " (or its name, e.g. `gte`), or `{key: value}` equality filters."
    ),
    # No property example: schemathesis would build a whole body around it that lacks the
    # fields a oneOf requires (the request examples of ContextInput show filters instead).
}


@extend_schema_field(FILTER_SCHEMA)
class FilterField(serializers.Field):  # type: ignore[type-arg]
    """A metadata filter expression in its JSON form (``rag_plugin.filters``), validated."""

    def to_internal_value(self, data: Any) -> FilterExpression | None:
        try:
            return filters_from_json(data)
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "enum": [mode.value for mode in RerankMode]},
            {"type": "boolean"},
        ],
        "description": "How to rerank the results: `lexical`, `cross-encoder` or `off`; "
        "`true` means `lexical` and `false` `off` (the seed server's boolean).",
    }
)
class RerankField(serializers.Field):  # type: ignore[type-arg]
    """A rerank mode by name, or the seed's boolean."""

    def to_internal_value(self, data: Any) -> RerankMode:
        if isinstance(data, bool):
            return RerankMode.LEXICAL if data else RerankMode.OFF
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a rerank mode name or a boolean.")
        try:
            return parse_rerank_mode(data)
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value: Any) -> Any:
        return str(value)


RESERVED_METADATA_KEYS = frozenset(
    {"title", "source", "created_at", "tags", "chunking", "document_id", "chunk_index"}
)
"""Keys the store or the ingest path sets on every chunk; a client's metadata may not."""
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 8
MAX_METADATA_KEY_CHARS = 256


def metadata_schema(reserved: frozenset[str], example: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI schema of a metadata object whose keys may not be any of ``reserved``."""
    return {
        # Keys and values are the recursive MetadataValue of portal.api.schema's components.
        "type": "object",
        "propertyNames": {
            "minLength": 1,
            "maxLength": MAX_METADATA_KEY_CHARS,
            "not": {"enum": sorted(reserved)},
        },
        "additionalProperties": {"$ref": "#/components/schemas/MetadataValue"},
        "description": (
            "Metadata stored on every chunk of the document, usable by filters (and "
            "`has_image` by the vision rule): a JSON object of at most "
            f"{MAX_METADATA_BYTES} bytes, nested at most {MAX_METADATA_DEPTH} deep, keys of at "
            f"most {MAX_METADATA_KEY_CHARS} characters, none of "
            + ", ".join(f"`{key}`" for key in sorted(reserved))
            + "."
        ),
        "example": example,
    }


@extend_schema_field(
    metadata_schema(
        RESERVED_METADATA_KEYS, {"page_number": 3, "has_image": False, "topic": "billing"}
    )
)
class MetadataField(serializers.Field):  # type: ignore[type-arg]
    """A document's own metadata: a bounded JSON object without reserved keys."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        for key in data:
            if key in RESERVED_METADATA_KEYS:
                raise serializers.ValidationError(f"{key!r} is set by the server; use another key.")
        _check_json(data, 1)
        size = len(json.dumps(data, ensure_ascii=False).encode())
        if size > MAX_METADATA_BYTES:
            raise serializers.ValidationError(
                f"Metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}."
            )
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def _check_json(value: Any, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise serializers.ValidationError(f"Metadata nests deeper than {MAX_METADATA_DEPTH}.")
    if isinstance(value, dict):
        for key, item in value.items():
            if not key or len(key) > MAX_METADATA_KEY_CHARS:
                raise serializers.ValidationError(
                    f"Metadata keys must have 1 to {MAX_METADATA_KEY_CHARS} characters."
                )
            _check_text(key)
            _check_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth + 1)
    elif isinstance(value, str):
        _check_text(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise serializers.ValidationError("Metadata numbers must be finite.")


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise serializers.ValidationError("Metadata text must not contain NUL characters.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise serializers.ValidationError(
            "Metadata text must be valid Unicode (found an unpaired surrogate)."
        ) from None
