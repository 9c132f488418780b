"""Keeping the garbage collector off a benchmark run's collected tree.

The collected tree (items, suites, their cases and the worlds' data) lives
until the session ends, so every full collection during the run walks all
of it and frees nothing. As each suite loads (its cases, the largest part
of the tree, are then made) and once collection ends, the plugin moves
everything alive to the collector's permanent generation, and gives it back
when the run is over. Freezing the loaded cases early also keeps the full
collections that making the items triggers off them. A process that ends
with the run keeps it frozen: an xdist worker, and a run started from
pytest's command line (``pytest``, ``python -m pytest``), whose interpreter
would otherwise walk the whole tree once more in its last collection, for
nothing. Objects freed by reference counting are unaffected; a cycle among
frozen objects that became garbage during the run is freed once the run
ends, where the process carries on.

While a suite or its oracle loads, automatic collection is paused
(:func:`collector_paused`): what loading makes outlives it, and every full
collection the growing heap triggered on the way walked all of it again, so
a large suite's load cost grew faster than the suite. One young collection
as the load ends frees what it left in garbage cycles.

While the run goes on, what each full collection leaves alive is frozen as
well: the run's kept reports (pytest's terminal statistics and JUnit
reporters, the plugin's results) only grow, so every later full collection
would walk all of them again and free nothing, a cost a case that grew with
the run's size. Frozen right after a full collection, everything frozen was
found alive; each object is then walked by one full collection, not by every
one after it. The price: a garbage cycle alive at one of those collections
and dropped later is freed only at the thaw, and never in a process that
ends with its session, whose unraisable-exception warnings (a finalizer that
raises) then miss it (docs/outcomes.md says so).
"""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

_FROZEN_KEY = pytest.StashKey[bool]()


def arrange_thaw(config: pytest.Config) -> None:
    """Register the thaw, before pytest's own plugins register their cleanups.

    Cleanups run last-registered first, so the tree is given back only after
    pytest's final collections (the unraisable-exception plugin's), which would
    otherwise walk the whole tree, still alive then, for nothing.
    """
    config.add_cleanup(functools.partial(_thaw, config))


def freeze_alive(config: pytest.Config) -> None:
    """Move everything alive now to the permanent generation (thawed as the module says).

    From the first call on, what each later full collection leaves alive is
    frozen too, until the thaw.
    """
    if not hasattr(gc, "freeze"):
        return  # an interpreter without generations to freeze (PyPy)
    gc.freeze()
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)
    # Given back in a process that ends with its session, the tree would only be
    # walked once more by the interpreter's last collection: most of a second for
    # a 7,756-case suite, and an xdist controller waits for each worker's exit.
    if not (hasattr(config, "workerinput") or _started_from_command_line()):
        config.stash[_FROZEN_KEY] = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside the block; one young collection as it ends.

    That collection walks what the block made once, as the first allocation
    after it would have, and frees the garbage cycles among it before anything
    freezes them. A block inside another, or run while the collector is already
    off (by the user's choice), leaves the collector as it found it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


_SESSION_ENTRIES = frozenset({"main", "_main"})
"""Where pytest makes and runs a session (``_main`` from pytest 9 on)."""
_COMMAND_LINE_ENTRIES = frozenset({"console_main", "_console_main"})
"""pytest's command-line entry points (``_console_main`` from pytest 9.1 on)."""


def _started_from_command_line() -> bool:
    """Whether this session was started by pytest's command-line entry, which ends the process.

    The innermost session entry is this session's: ``pytest.main`` (pytester's
    in-process runs, scripts) returns to a caller that carries on, and needs
    its memory back, even inside a test run itself started from the command
    line. Should pytest rename these functions, the tree is given back as in
    any other process: slower, never wrong.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if _in_pytest_config(frame, _SESSION_ENTRIES):
            caller = frame.f_back
            return caller is not None and _in_pytest_config(caller, _COMMAND_LINE_ENTRIES)
        frame = frame.f_back
    return False


def _in_pytest_config(frame: FrameType, names: frozenset[str]) -> bool:
    return frame.f_code.co_name in names and frame.f_globals.get("__name__") == "_pytest.config"


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    """After a full collection (the oldest generation), freeze what it found alive."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()


def _thaw(config: pytest.Config) -> None:
    if _freeze_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_survivors)
    if config.stash.get(_FROZEN_KEY, False):
        del config.stash[_FROZEN_KEY]
        gc.unfreeze()
