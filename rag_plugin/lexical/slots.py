"""Dense integer slots for document ids, so numpy arrays can hold one value per document."""

from __future__ import annotations

from collections.abc import Container

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "DocumentSlots", "FloatArray", "IntArray", "top_by_score"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


class DocumentSlots:
    """Maps ids to small integers; a removed document's slot is reused by the next one."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self._slot_of: dict[str, int] = {}
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def capacity(self) -> int:
        """One more than the highest slot ever handed out: the length per-slot arrays need."""
        return len(self.ids)

    def add(self, doc_id: str) -> int:
        """A slot for ``doc_id``, which must not hold one already."""
        if self._free:
            slot = self._free.pop()
            self.ids[slot] = doc_id
        else:
            slot = len(self.ids)
            self.ids.append(doc_id)
        self._slot_of[doc_id] = slot
        return slot

    def remove(self, doc_id: str) -> int | None:
        """Free ``doc_id``'s slot and return it; None if it had none."""
        slot = self._slot_of.pop(doc_id, None)
        if slot is not None:
            self.ids[slot] = None
            self._free.append(slot)
        return slot


def top_by_score(
    slots: IntArray,
    scores: FloatArray,
    ids: list[str | None],
    top_k: int,
    allowed_ids: Container[str] | None = None,
) -> list[tuple[str, float]]:
    """The ``top_k`` ``(id, score)`` pairs with score > 0, best first, ties by id."""
    keep = scores > 0.0
    slots, scores = slots[keep], scores[keep]
    if allowed_ids is not None:
        keep = np.fromiter(
            (ids[slot] in allowed_ids for slot in slots.tolist()), dtype=bool, count=len(slots)
        )
        slots, scores = slots[keep], scores[keep]
    if len(scores) > top_k:
        # Everything tied with the k-th score stays in, so ids can break the tie.
        kth = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
        keep = scores >= kth
        slots, scores = slots[keep], scores[keep]
    ranked = sorted(
        zip((str(ids[slot]) for slot in slots.tolist()), scores.tolist(), strict=True),
        key=lambda pair: (-pair[1], pair[0]),
    )
    return ranked[:top_k]
