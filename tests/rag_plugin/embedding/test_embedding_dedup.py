"""E2: normalisation, content hashes and the dedup plan."""

from __future__ import annotations

import pytest

from rag_plugin.embedding.dedup import DedupPlan, content_hash_hex, normalize_for_dedup
from rag_plugin.exceptions import InvalidInputError

ALPHA_SHA256 = "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  hello   world \n\t again ", "hello world again"),
        ("alpha", "alpha"),
        (" alpha\n", "alpha"),
        ("Alpha", "Alpha"),
        ("a\u00a0b", "a b"),
        ("   ", ""),
    ],
)
def test_normalize_for_dedup_trims_and_collapses_whitespace(text: str, expected: str) -> None:
    assert normalize_for_dedup(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alpha", ALPHA_SHA256),
        (" alpha\n", ALPHA_SHA256),
        (
            "  hello   world \n\t again ",
            "cbb2d50bd9c870e0f098b9230d66d2f74d55544f2e57f1aabe3830443a040eb6",
        ),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ],
)
def test_content_hash_hex_is_sha256_of_normalised_text(text: str, expected: str) -> None:
    assert content_hash_hex(text) == expected


def test_content_hash_hex_keeps_case() -> None:
    assert content_hash_hex("Alpha") != content_hash_hex("alpha")


def test_plan_worked_example_from_spec() -> None:
    plan = DedupPlan.plan(["alpha", " alpha\n", "beta"])

    assert plan.unique_indices == (0, 2)
    assert plan.sources == (0, 0, 1)
    assert plan.hashes == (ALPHA_SHA256, content_hash_hex("beta"))
    assert plan.fan_out(["v0", "v1"]) == ["v0", "v0", "v1"]


def test_plan_first_occurrence_decides_slot_order() -> None:
    plan = DedupPlan.plan(["b", "a", "b", "c", "a"])

    assert plan.unique_indices == (0, 1, 3)
    assert plan.sources == (0, 1, 0, 2, 1)
    assert plan.fan_out([10, 20, 30]) == [10, 20, 10, 30, 20]


def test_plan_of_no_texts_is_empty() -> None:
    plan = DedupPlan.plan([])

    assert plan == DedupPlan((), (), ())
    assert plan.fan_out([]) == []


@pytest.mark.parametrize("vectors", [[], ["v0"], ["v0", "v1", "v2"]])
def test_fan_out_rejects_wrong_vector_count(vectors: list[str]) -> None:
    plan = DedupPlan.plan(["alpha", "beta"])

    with pytest.raises(InvalidInputError, match=f"Got {len(vectors)} vectors for 2 unique"):
        plan.fan_out(vectors)
