"""The conformance kit: check that a world kind keeps the contract the core relies on.

Call it from a world package's own tests::

    from pytest_agentbench.testing import check_world

    def test_my_world_conforms(tmp_path):
        report = check_world("my-suite-id", workdir=tmp_path)
        assert report.passed, report.render()

or run every check of a suite as its own test item::

    pytest --agentbench-conformance my-suite-id

The checks (:data:`CHECK_NAMES`, in order): the cases are deterministic;
views and the reference agent's results are byte-identical on a rerun; no
leak canary reaches the adapter; a byte flipped in a public artifact or in an
oracle file is a named refusal; every negative agent is declared in the
controls manifest and fails as declared; a tool-session world's receipts are
digest-stable; a serial and a ``-n 2`` run give the same JSON run report.

Names resolve on first use: the benchmark plugin registers this package's pytest
plugin in every benchmark run, and a run without ``--agentbench-conformance``
imports no check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentbench.sdk.lazy_names import lazy_names

_EXPORTS: dict[str, str] = {
    "CHECK_NAMES": "pytest_agentbench.testing.kit",
    "CheckOutcome": "pytest_agentbench.testing.kit",
    "ConformanceReport": "pytest_agentbench.testing.kit",
    "check_world": "pytest_agentbench.testing.kit",
    "run_check": "pytest_agentbench.testing.kit",
    "ConformanceFailure": "pytest_agentbench.testing.checks",
    "NotApplicable": "pytest_agentbench.testing.checks",
    "SuiteUnderTest": "pytest_agentbench.testing.checks",
}

__all__ = [
    "CHECK_NAMES",
    "CheckOutcome",
    "ConformanceFailure",
    "ConformanceReport",
    "NotApplicable",
    "SuiteUnderTest",
    "check_world",
    "run_check",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from pytest_agentbench.testing.checks import ConformanceFailure, NotApplicable, SuiteUnderTest
    from pytest_agentbench.testing.kit import (
        CHECK_NAMES,
        CheckOutcome,
        ConformanceReport,
        check_world,
        run_check,
    )
