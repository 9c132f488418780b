"""A package whose names are imported on first use (PEP 562).

The SDK and the conformance kit load in every benchmark run, yet most of
what they export serves only some runs: each name's module is imported when
the name is first asked for, then kept in the package's namespace.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(
    package: str, modules: Mapping[str, str], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``modules`` maps each name to its
    module; ``names`` (the package's ``__all__``) is what ``dir()`` lists beside the namespace."""
    namespace = sys.modules[package].__dict__
    listed = frozenset(names)

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | listed)

    return __getattr__, __dir__
