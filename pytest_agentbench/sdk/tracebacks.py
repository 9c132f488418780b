"""The adapter's traceback as text: its own frames, or all of them under ``--tb=long``.

Standard library only: the isolated adapter's process imports it at start-up.
"""

from __future__ import annotations

import os
import sys
import traceback

from pytest_agentbench.sdk.errors import escape_surrogates

MAX_TRACEBACK_CHARS = 8000
"""How much of an adapter's traceback a case keeps (JUnit and the JSON report repeat it)."""

FULL_TRACEBACKS = False
"""Keep the harness's frames in adapter tracebacks too (pytest's ``--tb=long``)."""

_HARNESS_MODULES = ("pytest_agentbench", "_pytest", "pytest", "pluggy")


def _harness_folders() -> tuple[str, ...]:
    folders = []
    for name in _HARNESS_MODULES:
        module = sys.modules.get(name)
        location = getattr(module, "__file__", None)
        if location:
            folders.append(os.path.dirname(location) + os.sep)
    return tuple(folders)


def adapter_traceback(exc: BaseException) -> str:
    """The traceback of what the adapter raised, as text, its chained causes included.

    Only the adapter's own frames are kept (not the harness's, pytest's or
    pluggy's) unless :data:`FULL_TRACEBACKS`; text so it can travel in a
    JSON-safe case result, from a pytest-xdist worker too.
    """
    try:
        summary = traceback.TracebackException.from_exception(exc)
        if not FULL_TRACEBACKS:
            _keep_adapter_frames(summary, _harness_folders(), set())
        # Paths below the working folder are shown relative to it, so a report
        # reads the same from every checkout (xdist's remote workers included).
        text = "".join(summary.format()).rstrip().replace(os.getcwd() + os.sep, "")
    except BaseException:  # an adapter's exception may not render; its type still does
        text = type(exc).__name__
    text = escape_surrogates(text)
    if len(text) <= MAX_TRACEBACK_CHARS:
        return text
    # The end holds the raising line and the exception: keep it.
    return f"[{len(text) - MAX_TRACEBACK_CHARS} characters cut]...{text[-MAX_TRACEBACK_CHARS:]}"


def _keep_adapter_frames(
    summary: traceback.TracebackException, harness: tuple[str, ...], seen: set[int]
) -> None:
    if id(summary) in seen:
        return
    seen.add(id(summary))
    summary.stack = traceback.StackSummary.from_list(
        [frame for frame in summary.stack if not frame.filename.startswith(harness)]
    )
    for chained in (summary.__cause__, summary.__context__):
        if chained is not None:
            _keep_adapter_frames(chained, harness, seen)
