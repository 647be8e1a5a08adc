"""Serializer fields that refuse values of the wrong JSON type instead of coercing them.

DRF's stock fields turn ``123`` into ``"123"``, ``"10"`` into ``10`` and ``"yes"`` into
``True``; for an API whose contract says which JSON type each field has, a wrong type is a
client bug worth a 400 that names the field.
"""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A JSON string of valid Unicode (DRF already refuses NUL characters)."""

    default_error_messages = {
        "invalid": "Must be a string.",
        "surrogates": "Must be valid Unicode text (found an unpaired surrogate).",
    }

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            self.fail("surrogates")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    default_error_messages = {"invalid": "Must be a finite number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float) or not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class InputSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A request body: a JSON object whose keys are all known fields."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["Request body must be a JSON object."]}
            )
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {unknown[0]: [f"Unknown field. Allowed: {', '.join(sorted(self.fields))}."]}
            )
        return super().to_internal_value(data)
