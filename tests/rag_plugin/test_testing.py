"""The shipped fake embedder: deterministic, recorded, shaped like a real one."""

from __future__ import annotations

import hashlib
import math
import struct

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.testing import FakeEmbedder, fake_vector


def test_default_shape_and_name() -> None:
    embedder = FakeEmbedder()

    assert embedder.dimensions == 16
    assert embedder.model_name == "fake-16"
    assert len(embedder.embed_query("x")) == 16


def test_custom_name_and_dimensions() -> None:
    embedder = FakeEmbedder(384, model_name="stand-in")

    assert embedder.model_name == "stand-in"
    assert len(embedder.embed_query("x")) == 384


def test_same_text_same_vector_across_instances() -> None:
    assert FakeEmbedder().embed(["alpha"]) == FakeEmbedder().embed(["alpha"])


def test_different_texts_get_different_unit_vectors() -> None:
    a, b = FakeEmbedder().embed(["alpha", "beta"])

    assert a != b
    assert math.isclose(math.fsum(x * x for x in a), 1.0)
    assert math.isclose(math.fsum(x * x for x in b), 1.0)


def test_fake_vector_is_fixed_by_sha256() -> None:
    # First word of sha256(b"0:alpha") as little-endian uint32, mapped onto [-1, 1].
    word = struct.unpack("<I", hashlib.sha256(b"0:alpha").digest()[:4])[0]

    assert fake_vector("alpha", 3)[0] == word / 0xFFFFFFFF * 2.0 - 1.0
    assert fake_vector("alpha", 20)[:3] == fake_vector("alpha", 3)
    assert all(-1.0 <= x <= 1.0 for x in fake_vector("alpha", 64))


def test_records_every_batch() -> None:
    embedder = FakeEmbedder(batch_size=2)

    embedder.embed(["a", "b", "c"])
    embedder.embed_query("d")

    assert embedder.batches == [["a", "b"], ["c"], ["d"]]


@pytest.mark.parametrize("dimensions", [0, -3, True])
def test_dimensions_must_be_positive(dimensions: int) -> None:
    with pytest.raises(InvalidInputError, match="dimensions must be a positive integer"):
        FakeEmbedder(dimensions)
