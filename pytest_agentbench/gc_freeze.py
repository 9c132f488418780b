"""Keeping the garbage collector off a benchmark run's collected tree.

The collected tree (items, suites, their cases and the worlds' data) lives
until the session ends, so every full collection during the run walks all
of it and frees nothing. Once collection ends the plugin moves everything
alive to the collector's permanent generation, and gives it back when the
run is over (an xdist worker, whose process ends with the run, keeps it
frozen). Objects freed by reference counting are unaffected; a cycle among
frozen objects that became garbage during the run is freed once the run ends.
"""

from __future__ import annotations

import functools
import gc

import pytest

_FROZEN_KEY = pytest.StashKey[bool]()


def arrange_thaw(config: pytest.Config) -> None:
    """Register the thaw, before pytest's own plugins register their cleanups.

    Cleanups run last-registered first, so the tree is given back only after
    pytest's final collections (the unraisable-exception plugin's), which would
    otherwise walk the whole tree, still alive then, for nothing.
    """
    config.add_cleanup(functools.partial(_thaw, config))


def freeze_collected(config: pytest.Config) -> None:
    if not hasattr(gc, "freeze"):
        return  # an interpreter without generations to freeze (PyPy)
    gc.freeze()
    # An xdist worker's process ends with its session, and the controller waits
    # for it to end: given back, the tree would only be walked once more by the
    # interpreter's last collection (most of a second for a 7,756-case suite).
    if not hasattr(config, "workerinput"):
        config.stash[_FROZEN_KEY] = True


def _thaw(config: pytest.Config) -> None:
    if config.stash.get(_FROZEN_KEY, False):
        del config.stash[_FROZEN_KEY]
        gc.unfreeze()
