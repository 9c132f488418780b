"""Cheap private copies of what a world hands to an adapter.

A world gives each case its own copy of the public view (and each tool call
its own copy of the records it serves) so an adapter that mutates what it was
given cannot reach the next case, the controls or the oracle. ``copy.deepcopy``
does that for any object, but it walks every value through a memo in Python
and dominates the cost of a case. The two helpers here make the same
guarantee for the two shapes worlds hand out:

* :func:`copy_json` for JSON values (dicts, lists and scalars): containers
  are rebuilt, immutable scalars shared;
* :class:`Pristine` for a model (or any picklable object) handed out many
  times: pickled once, each copy is one ``pickle.loads``.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Generic, TypeVar, cast

_T = TypeVar("_T")

_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: _T) -> _T:
    """A deep copy of a JSON value, several times faster than ``copy.deepcopy``.

    Exact ``dict`` and ``list`` are rebuilt and exact scalars shared (they are
    immutable); anything else (a tuple, a dict subclass, a model) falls back to
    ``copy.deepcopy``, so the copy is independent whatever the value holds.
    Unlike ``deepcopy`` it does not keep two references to one container as
    one: a value in two places is copied twice, which JSON cannot tell apart.
    """
    return cast(_T, _copy(value))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else _copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


class Pristine(Generic[_T]):
    """An object kept as it was when given, handing out independent deep copies.

    The object is pickled once; every :meth:`copy` unpickles it, which builds
    the whole object graph afresh (shared references stay shared, as with
    ``copy.deepcopy``) at a fraction of ``deepcopy``'s cost for pydantic models.
    Later changes to the object given do not reach the copies.
    """

    __slots__ = ("_pickled",)

    def __init__(self, value: _T) -> None:
        self._pickled = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def copy(self) -> _T:
        # Only bytes this instance pickled itself are ever unpickled.
        return cast(_T, pickle.loads(self._pickled))
