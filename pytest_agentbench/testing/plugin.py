"""``pytest --agentbench-conformance SUITE``: each conformance check a test item.

Registered with the rest of the benchmark plugin; it adds items only when the
option is given. The checks import the core when an item runs, not here.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.testing import SuiteUnderTest


class ConformanceItem(pytest.Item):
    """One conformance check of one suite."""

    def __init__(self, *, suite: str, check: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.suite = suite
        self.check = check
        self.add_marker("agentbench_conformance")

    def runtest(self) -> None:
        from pytest_agentbench.testing import run_check

        outcome = run_check(self.check, suite_under_test(self.config, self.suite))
        if outcome.status == "not_applicable":
            pytest.skip(outcome.detail)
        if outcome.status == "failed":
            raise ConformanceError(outcome.detail)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: str | None = None,
    ) -> str:
        if isinstance(excinfo.value, ConformanceError):
            return f"conformance check {self.check} of {self.suite}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.suite, None, f"conformance {self.suite}::{self.check}"


class ConformanceError(Exception):
    """A failed check, reported as one line rather than a traceback."""


_UNDER_TEST = pytest.StashKey[dict[str, "SuiteUnderTest"]]()


def suite_under_test(config: pytest.Config, suite: str) -> SuiteUnderTest:
    """One suite under test per suite and process, shared by its checks as ``check_world``
    shares one (the reference run two checks read is made once); its work folder is removed
    when the session ends."""
    from pytest_agentbench.run.session import get_state
    from pytest_agentbench.testing import SuiteUnderTest
    from pytest_agentbench.testing.checks import work_folder

    shared = config.stash.setdefault(_UNDER_TEST, {})
    if suite not in shared:
        folders = ExitStack()
        config.add_cleanup(folders.close)
        shared[suite] = SuiteUnderTest(
            suite,
            registry=get_state(config).registry,
            workdir=folders.enter_context(work_folder()),
            plugins=invocation_plugins(config),
        )
    return shared[suite]


def invocation_plugins(config: pytest.Config) -> tuple[str, ...]:
    """Modules the run was given with ``-p``: the xdist check's subprocesses load them too."""
    args = list(config.invocation_params.args)
    found = []
    for index, arg in enumerate(args):
        if arg == "-p" and index + 1 < len(args):
            found.append(args[index + 1])
        elif arg.startswith("-p") and len(arg) > 2:
            found.append(arg[2:])
    return tuple(name for name in found if not name.startswith("no:"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "agentbench_conformance: a conformance-kit check (--agentbench-conformance)"
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    suites = config.getoption("agentbench_conformance")
    if not suites:
        return  # the checks are imported by a run that asks for them alone
    from pytest_agentbench.testing import CHECK_NAMES

    for suite in suites:
        for check in CHECK_NAMES:
            items.append(
                ConformanceItem.from_parent(
                    session, name=f"conformance[{suite}::{check}]", suite=suite, check=check
                )
            )
