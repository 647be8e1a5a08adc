"""The contract every store passes (SPEC V4): one mixin, inherited by each store's test class.

A store's test module provides the ``store`` fixture, returning an *empty* store::

    class TestMemoryStore(StoreContract):
        @pytest.fixture
        def store(self) -> Store:
            return MemoryStore()

Expected scores never come from the store under test: dense similarities are computed here
from the vectors with plain maths, BM25 and fuzzy scores from a fresh reference index over the
same chunk texts. Dense scores are compared with ``abs=1e-6`` because a database may keep
vectors as float32; lexical scores with ``abs=1e-9``. The tests live in one mixin per concern:
collections, documents, legs, typo correction and filters.
"""

from __future__ import annotations

from .collection_contract import CollectionContract
from .contract_base import ALICE, BOB, CORPUS, chunk_inputs
from .correction_contract import CorrectionContract
from .document_contract import DocumentContract
from .filter_contract import FilterContract
from .leg_contract import LegContract

__all__ = ["ALICE", "BOB", "CORPUS", "StoreContract", "chunk_inputs"]


class StoreContract(
    CollectionContract, DocumentContract, LegContract, CorrectionContract, FilterContract
):
    """Behaviour shared by every :class:`Store`; subclasses provide the ``store`` fixture."""
