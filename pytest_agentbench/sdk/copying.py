"""Cheap private copies of what a world hands to an adapter.

A world gives each case its own copy of the public view (and each tool call
its own copy of the records it serves) so an adapter that mutates what it was
given cannot reach the next case, the controls or the oracle. ``copy.deepcopy``
does that for any object, but it dispatches every value through a memo in
Python and dominates the cost of a case. The helpers here make the same
guarantee for the shapes worlds hand out, several times faster:

* :func:`copy_json` for JSON values (dicts, lists and scalars);
* :func:`copy_model` for pydantic models holding JSON values, tuples, other
  models and immutable scalars (dates, enum members).

Containers and models are rebuilt; immutable scalars are shared. Anything
else falls back to ``copy.deepcopy``, so a copy is independent whatever the
value holds. Unlike ``deepcopy`` they do not keep two references to one
container as one: a value held in two places is copied twice.
"""

from __future__ import annotations

import copy
import datetime
import enum
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)

_SCALARS = frozenset(
    {str, int, float, bool, type(None), datetime.datetime, datetime.date, datetime.time}
)


def copy_json(value: _T) -> _T:
    """A deep copy of a JSON value."""
    return cast(_T, _copy(value))


def copy_model(model: _M) -> _M:
    """A deep copy of a pydantic model, as ``model.model_copy(deep=True)`` makes it."""
    return cast(_M, _copy(model))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else _copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if kind is tuple:
        return tuple([item if type(item) in _SCALARS else _copy(item) for item in value])
    if kind in _SCALARS or isinstance(value, enum.Enum):
        return value
    if isinstance(value, BaseModel):
        return _copy_model(value)
    return copy.deepcopy(value)


def _copy_model(model: BaseModel) -> BaseModel:
    # What BaseModel.__deepcopy__ does, with this module's copy for the field values.
    kind = type(model)
    fresh = kind.__new__(kind)
    setattr_ = object.__setattr__
    setattr_(fresh, "__dict__", _copy(model.__dict__))
    extra = model.__pydantic_extra__
    setattr_(fresh, "__pydantic_extra__", None if extra is None else _copy(extra))
    setattr_(fresh, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    private = model.__pydantic_private__
    if private is not None:
        private = copy.deepcopy({k: v for k, v in private.items() if v is not PydanticUndefined})
    setattr_(fresh, "__pydantic_private__", private)
    return fresh
