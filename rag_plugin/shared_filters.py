"""What the legs of one search share about its filters (``rag_plugin.filters.shared_filters``
makes one; every store's legs accept it wherever they accept filters)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rag_plugin.filters import FilterExpression

__all__ = ["SharedFilters"]

_T = TypeVar("_T")


class SharedFilters:
    """One search's filters, handed to each of its legs, with what one leg has worked out
    about them for the others (:func:`rag_plugin.filters.shared_filters` makes it).

    A store keys what it keeps (:meth:`once`) by what it depends on besides the expression,
    such as the collection: the PostgreSQL store keeps the ids of the matching chunks, so a
    hybrid search reads them once instead of once a leg, and the legs running at once in
    threads wait for the first reader instead of all reading them side by side. Each leg
    still has its own transaction, so the ids come from the snapshot of whichever leg read
    them first: as if the other legs ran a moment earlier or later. Valid for one search;
    never keep one across searches (writes change what matches).
    """

    __slots__ = ("_kept", "_lock", "expression")

    def __init__(self, expression: FilterExpression) -> None:
        self.expression = expression
        self._lock = threading.Lock()
        self._kept: dict[Hashable, Any] = {}

    def once(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``'s value, computed by the first caller with this ``key`` (the others
        wait for it, then get the same value)."""
        with self._lock:
            if key not in self._kept:
                self._kept[key] = compute()
            value: _T = self._kept[key]
            return value
