"""The wire format between the harness and the isolated adapter process.

Messages are dicts with an ``op`` key, framed by
:class:`multiprocessing.connection.Connection` (a length prefix per message).
The two directions use different encodings, on purpose:

* harness -> child: :mod:`pickle`. Public views are records (pydantic models
  with datetimes, tuples, frozen containers) that JSON would flatten; pickle
  rebuilds the very types the adapter would see in-process. The child trusts
  the harness, so unpickling there is safe.
* child -> harness: JSON only, read back by the strict reader. The harness
  never unpickles anything the adapter's process wrote, since unpickling runs
  code chosen by the writer; JSON also matches what crosses anyway (adapter
  outputs and tool arguments are JSON values).

This module is imported by the child, so it uses the standard library only.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import signal
import types
from collections.abc import Mapping
from typing import Any

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Largest message either side accepts; a bigger one fails the call that sent it."""

MAX_TEXT = 2000
"""Longest exception text that crosses back (the first line, truncated)."""

INTERRUPT_SIGNAL = signal.SIGUSR1
"""What the harness sends the child when a call's case limit has passed: the child raises
:class:`CallInterrupted` in the adapter, as the case limit's alarm raises ``CaseTimeout``
in-process, and answers ``interrupted`` with the model calls made so far."""


class CallInterrupted(BaseException):
    """Raised in the child's adapter call by :data:`INTERRUPT_SIGNAL`: the case limit passed.

    A BaseException, as ``CaseTimeout`` is in-process, so ``except Exception`` in the
    adapter cannot swallow it; a request it cuts off stays counted, as cut off.
    """


def _rebuild_mappingproxy(items: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(items)


class _ViewPickler(pickle.Pickler):
    """A pickler that also carries read-only mappings (``MappingProxyType``)."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is types.MappingProxyType:
            return _rebuild_mappingproxy, (dict(obj),)
        return NotImplemented


def pickle_for_child(value: Any) -> bytes:
    """Encode ``value`` for the child (raises if it cannot be pickled)."""
    buffer = io.BytesIO()
    _ViewPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def unpickle_from_parent(data: bytes) -> Any:
    return pickle.loads(data)


def _jsonable(value: Any) -> Any:
    """``json.dumps`` fallback: records as their JSON dump, other mappings as dicts."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        raise TypeError(f"a {type(value).__name__} has no JSON order")
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any) -> str:
    """``value`` as compact JSON; raises for anything JSON cannot hold (NaN included).

    Text holding a lone surrogate (no UTF-8 encodes it) is written with JSON's
    ``\\u`` escapes, so the harness reads back the very string the adapter made
    and judges it as it would in-process.
    """
    text = json.dumps(
        value, default=_jsonable, allow_nan=False, ensure_ascii=False, separators=(",", ":")
    )
    if _LONE_SURROGATE.search(text) is None:
        return text
    return json.dumps(
        value, default=_jsonable, allow_nan=False, ensure_ascii=True, separators=(",", ":")
    )


def json_message(op: str, payload: Mapping[str, Any], value_text: str | None = None) -> bytes:
    """A child -> harness message; ``value_text`` is already-encoded JSON put under ``value``."""
    head = json_text({"op": op, **payload})
    if value_text is not None:
        head = f'{head[:-1]},"value":{value_text}}}'
    return head.encode("utf-8")


def describe_raised(exc: BaseException) -> tuple[str, str]:
    """The type name and first line of ``exc``, even when its ``__str__`` raises."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException as inner:  # the adapter's own __str__ may raise anything
        text = f"<str() raised {type(inner).__name__}>"
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > MAX_TEXT:
        first = f"{first[:MAX_TEXT]}... [{len(first)} characters]"
    return name, first


def shape(value: Any) -> dict[str, bool]:
    """Public attribute names of ``value``, each with whether it is callable."""
    members: dict[str, bool] = {}
    for name in dir(value):
        if name.startswith("_"):
            continue
        try:
            member = getattr(value, name)
        except Exception:
            continue
        members[name] = callable(member)
    return members
