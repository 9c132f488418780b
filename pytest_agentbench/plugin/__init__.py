"""pytest integration: hooks, options, fixtures, collection items, snapshots."""

import sys

OWN_PACKAGE = "pytest_agentbench"
REWRITTEN_PACKAGE = "pytest_agentbench.testing"
"""The conformance kit, which world authors' tests call: its asserts stay rewritten."""


def _leave_the_plugin_modules_unrewritten() -> None:
    """Take this package out of pytest's assertion rewriting, but for the conformance kit.

    pytest rewrites the asserts of every module in the package owning a ``pytest11``
    entry point. A rewritten module is parsed and compiled from source, and its
    bytecode is cached under a name of pytest's own only where Python may write
    bytecode: under ``PYTHONDONTWRITEBYTECODE`` (containers and CI often set it)
    every pytest process compiled every module of ours it imported, about 0.4 s of
    CPU, and the bytecode pip or ``compileall`` wrote went unused. The plugin's
    asserts state invariants for the type checker, not test outcomes. pytest has no
    public way to unmark a package, hence the guard: if its rewriting hook changes
    shape, nothing changes.
    """
    if "_pytest.assertion.rewrite" not in sys.modules:  # not a pytest process
        return
    from _pytest.assertion.rewrite import AssertionRewritingHook

    for finder in sys.meta_path:
        if isinstance(finder, AssertionRewritingHook):
            marked = getattr(finder, "_must_rewrite", None)
            if isinstance(marked, set) and OWN_PACKAGE in marked:
                marked.discard(OWN_PACKAGE)
                finder.mark_rewrite(REWRITTEN_PACKAGE)


_leave_the_plugin_modules_unrewritten()
