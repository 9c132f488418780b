"""pytest integration: hooks, options, fixtures, collection items, snapshots."""

import sys

REWRITTEN_PACKAGE = "pytest_agentbench.testing"
"""The conformance kit, which world authors' tests call: pytest rewrites its asserts.

pytest rewrites the modules of a plugin's distribution only where it declares the entry
point, which lives in pytest-agentbench-entry: the rest of the package is compiled as
Python compiles it, and its bytecode cache is used (its asserts state invariants for the
type checker, not test outcomes). The kit's asserts are test outcomes, so it is marked.
"""

if "_pytest.assertion.rewrite" in sys.modules:  # a pytest process
    import pytest

    pytest.register_assert_rewrite(REWRITTEN_PACKAGE)
