"""How the OpenAPI schema states what the server enforces (SPEC A6).

drf-spectacular's ``AutoSchema`` leaves out rules our API enforces, so schemathesis (which the
test suite runs against the live server, tests/portal/api/test_schema_fuzz.py) would send
requests the schema allows and the server refuses:

- a string field that may not be blank says nothing about it: DRF refuses ``""`` (and, for a
  field that trims whitespace, ``"   "``), so the schema gets ``minLength: 1`` and, when
  trimmed, "not only whitespace";
- the login needs a username or an email, and context requests a profile or collections (not
  both), which an ``InputSerializer`` declares (``any_of``, ``one_of``) and a JSON schema says
  with ``anyOf`` and ``oneOf``; an upload's source or title goes with one file only;
- a request body refuses unknown keys (``additionalProperties: false``), a name field lists its
  names (``enum``), and the metadata filter grammar is recursive (components of its own);
- a request body is documented on PUT, PATCH and POST only, but ``DELETE /api/rag/collection``
  takes its JSON body as the seed API does (OpenAPI allows a DELETE body): a view that sets
  ``delete_takes_body = True`` gets its declared request body documented.
"""

from __future__ import annotations

from typing import Any, Literal

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from portal.api.fields import MAX_METADATA_KEY_CHARS, InputSerializer, NameField
from rag_plugin.filters import (
    LIST_OPERATORS,
    MAX_FILTERS,
    MAX_KEY_LENGTH,
    MAX_VALUES,
    ORDERING_OPERATORS,
    TEXT_OPERATORS,
    FilterCondition,
    FilterOperator,
)

# What Python's str.strip() removes (DRF trims with it): not ECMAScript's \s, which leaves out
# the separators U+001C-U+001F and U+0085 and adds U+FEFF.
ONLY_WHITESPACE = {
    "pattern": r"^[\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
}


class PortalAutoSchema(AutoSchema):
    """The project's ``DEFAULT_SCHEMA_CLASS``: AutoSchema plus the rules listed above."""

    def _map_serializer_field(
        self,
        field: serializers.Field[Any, Any, Any, Any],
        direction: str,
        bypass_extensions: bool = False,
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(  # type: ignore[no-untyped-call]
            field, direction, bypass_extensions
        )
        if direction != "request" or not isinstance(field, serializers.CharField):
            return schema
        if isinstance(field, NameField):
            schema["enum"] = [*field.names, *([None] if field.allow_null else [])]
        if field.allow_blank or schema.get("type") != "string":
            return schema
        schema.setdefault("minLength", 1)
        has_pattern = any(isinstance(v, RegexValidator) for v in field.validators)
        if field.trim_whitespace and not has_pattern:
            # Said with "not" rather than the pattern \S: schemathesis ignores maxLength on
            # strings generated for a pattern (it sent 106 characters for maxLength 100).
            schema["not"] = ONLY_WHITESPACE
        return schema

    def _map_basic_serializer(
        self, serializer: serializers.Serializer[Any], direction: str
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(  # type: ignore[no-untyped-call]
            serializer, direction
        )
        if direction == "request" and isinstance(serializer, InputSerializer):
            schema["additionalProperties"] = False
            if serializer.any_of:
                schema["anyOf"] = [{"required": [name]} for name in serializer.any_of]
            if serializer.one_of:
                schema["oneOf"] = [{"required": [name]} for name in serializer.one_of]
        return schema

    def get_serializer_name(
        self, serializer: serializers.Serializer[Any], direction: Literal["request", "response"]
    ) -> str:
        """A serializer nested in its view is named for the operation: ``SearchView.Input``
        is the component ``SearchInput``."""
        outer, _, inner = type(serializer).__qualname__.rpartition(".")
        if outer.endswith("View"):
            return outer.removesuffix("View") + inner
        return super().get_serializer_name(serializer, direction)

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        # Only where the view says so: asking every DELETE for its request serializer would
        # make drf-spectacular guess (and warn about) one for views that take no body.
        declared = self.method == "DELETE" and getattr(self.view, "delete_takes_body", False)
        if not declared:
            return super()._get_request_body(direction)  # type: ignore[no-untyped-call,no-any-return]
        # The parent documents bodies of "unsafe" methods only; it reads the method from here.
        self.method = "POST"
        try:
            return super()._get_request_body(direction)  # type: ignore[no-untyped-call,no-any-return]
        finally:
            self.method = "DELETE"


class FileUploadInputScheme(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """An upload's form names a source or a title only when it holds one file."""

    target_class = "portal.api.files.FileUploadInput"

    def map_serializer(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(  # type: ignore[no-untyped-call]
            self.target, direction, bypass_extensions=True
        )
        schema["anyOf"] = [
            {"properties": {"file": {"maxItems": 1}}},
            {"properties": {"source": {"maxLength": 0}, "title": {"maxLength": 0}}},
        ]
        return schema


# -- the metadata filter grammar (rag_plugin.filters.filters_from_json) ----------------------

_SCALAR = {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}


def _operator_names(operators: frozenset[FilterOperator] | set[FilterOperator]) -> list[str]:
    """The spellings the parser takes: the symbol and the lower-case name (``>=``, ``gte``)."""
    return sorted({op.value for op in operators} | {op.name.lower() for op in operators})


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _filter_variants() -> list[dict[str, Any]]:
    """One subschema per operator family: which ``value`` each takes."""
    special = LIST_OPERATORS | ORDERING_OPERATORS | TEXT_OPERATORS | {FilterOperator.IS_EMPTY}
    scalar_operators = set(FilterOperator) - special
    return [
        {  # the operator defaults to ==
            "properties": {
                "operator": {"enum": _operator_names(scalar_operators)},
                "value": _SCALAR,
            },
            "required": ["value"],
        },
        {
            "properties": {
                "operator": {"enum": _operator_names(ORDERING_OPERATORS)},
                "value": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            },
            "required": ["operator", "value"],
        },
        {
            "properties": {
                "operator": {"enum": _operator_names(LIST_OPERATORS)},
                "value": {"type": "array", "items": _SCALAR, "maxItems": MAX_VALUES},
            },
            "required": ["operator", "value"],
        },
        {
            "properties": {
                "operator": {"enum": _operator_names(TEXT_OPERATORS)},
                "value": {"type": "string"},
            },
            "required": ["operator", "value"],
        },
        {
            "properties": {
                "operator": {"enum": _operator_names({FilterOperator.IS_EMPTY})},
                "value": {"type": "null"},
            },
            "required": ["operator"],
        },
    ]


def _shape(required: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """Objects holding ``required`` and no key but ``keys``: how the parser tells a group or a
    filter from ``{key: value}`` equality filters."""
    return {
        "required": [required],
        "properties": {key: {} for key in keys},
        "additionalProperties": False,
    }


def json_components(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the recursive grammars that ``FILTER_SCHEMA``
    and ``MetadataField`` (portal.api.fields) refer to."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["MetadataValue"] = {
        "description": "Any JSON value; object keys have 1 to "
        f"{MAX_METADATA_KEY_CHARS} characters.",
        "oneOf": [
            {"type": ["string", "number", "boolean", "null"]},
            {"type": "array", "items": _ref("MetadataValue")},
            {
                "type": "object",
                "propertyNames": {"minLength": 1, "maxLength": MAX_METADATA_KEY_CHARS},
                "additionalProperties": _ref("MetadataValue"),
            },
        ],
    }
    schemas["MetadataFilters"] = {
        "oneOf": [_ref("MetadataFilterGroup"), _ref("MetadataFilter"), _ref("EqualityFilters")]
    }
    schemas["MetadataFilterGroup"] = {
        "type": "object",
        "properties": {
            "condition": {"type": "string", "enum": [c.value for c in FilterCondition]},
            "filters": {"type": "array", "items": _ref("MetadataFilters"), "maxItems": MAX_FILTERS},
        },
        "required": ["filters"],
        "additionalProperties": False,
    }
    schemas["MetadataFilter"] = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
            "operator": {"type": "string"},
            "value": {},
        },
        "required": ["key"],
        "additionalProperties": False,
        "oneOf": _filter_variants(),
    }
    schemas["EqualityFilters"] = {
        "type": "object",
        "description": "`{key: value}`: every key equals its value (all must hold).",
        "propertyNames": {"minLength": 1, "maxLength": MAX_KEY_LENGTH},
        "additionalProperties": _SCALAR,
        "maxProperties": MAX_FILTERS,
        "not": {
            "anyOf": [
                _shape("filters", ("condition", "filters")),
                _shape("key", ("key", "operator", "value")),
            ]
        },
    }
    return result
