"""The API's strict JSON fields (portal/api/fields.py)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework import serializers

from portal.api.fields import BIGINT_MAX, StrictIntegerField


@pytest.mark.parametrize(("value", "expected"), [(5, 5), (5.0, 5), (-3.0, -3), (0.0, 0)])
def test_an_integer_field_takes_a_number_without_a_fraction(value: Any, expected: int) -> None:
    # JSON Schema's "integer" (what the OpenAPI schema says) counts 5.0 as one.
    assert StrictIntegerField().run_validation(value) == expected


@pytest.mark.parametrize("value", [5.5, float("nan"), float("inf"), True, "5", None, [5], 2.0**64])
def test_an_integer_field_refuses_anything_else(value: Any) -> None:
    with pytest.raises(serializers.ValidationError):
        StrictIntegerField(allow_null=False).run_validation(value)


def test_an_integer_field_keeps_within_bigint() -> None:
    assert StrictIntegerField().run_validation(BIGINT_MAX) == BIGINT_MAX
    with pytest.raises(serializers.ValidationError):
        StrictIntegerField().run_validation(BIGINT_MAX + 1)
