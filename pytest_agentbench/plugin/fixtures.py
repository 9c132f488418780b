"""The fixtures case items request; users' own tests may request them too.

``agentbench_adapter`` is session-scoped and overridable from a ``conftest.py``
(for example to build the agent from the user's own fixtures). Outside a case
item, ``agentbench_case`` and ``agentbench_world`` need the test to name its
case: ``@pytest.mark.agentbench(suite="<suite id>", case="<case id>")``.

Registered in every run, so the module imports only pytest: a test of the
user's that requests one of them is what turns the plugin on in a run
without suites (:func:`~pytest_agentbench.plugin.activation.activate`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin.activation import activate

if TYPE_CHECKING:
    from pytest_agentbench.run.session import LoadedSuite
    from pytest_agentbench.scoring.trials import Trial
    from pytest_agentbench.sdk.contracts import Case


def _loaded_case(request: pytest.FixtureRequest) -> tuple[LoadedSuite, Case]:
    from pytest_agentbench.run.session import get_state

    node = request.node
    loaded: LoadedSuite | None = getattr(node, "loaded", None)
    case: Case | None = getattr(node, "case", None)
    if loaded is not None and case is not None:
        return loaded, case
    marker = node.get_closest_marker("agentbench")
    suite_id = None if marker is None else marker.kwargs.get("suite")
    case_id = None if marker is None else marker.kwargs.get("case")
    if not suite_id or not case_id:
        pytest.fail(
            "agentbench_case/agentbench_world outside a benchmark item need "
            "@pytest.mark.agentbench(suite=..., case=...)",
            pytrace=False,
        )
    state = get_state(request.config)
    root = state.loader.registry.suites().get(suite_id)
    matches = [item for item in state.loader.loaded() if item.suite.id == suite_id]
    if matches:
        loaded = matches[0]
    elif root is not None:
        loaded = state.loader.load(root)
    else:
        pytest.fail(f"unknown agentbench suite {suite_id!r}", pytrace=False)
    for candidate in loaded.world.cases(loaded.suite):
        if candidate.case_id == case_id:
            return loaded, candidate
    pytest.fail(f"suite {suite_id!r} has no case {case_id!r}", pytrace=False)


@pytest.fixture(scope="session")
def agentbench_adapter(pytestconfig: pytest.Config) -> Any:
    """The system under test: ``--agentbench-adapter``, or the built-in reference agents."""
    from pytest_agentbench.run.session import get_state

    activate(pytestconfig)
    state = get_state(pytestconfig)
    if state.isolation is not None:
        return state.isolation.ready(state.adapter)
    return state.adapter


@pytest.fixture
def agentbench_case(request: pytest.FixtureRequest) -> Case:
    """The case of the running item."""
    activate(request.config)
    return _loaded_case(request)[1]


@pytest.fixture
def agentbench_world(request: pytest.FixtureRequest) -> Any:
    """The public projection of the case's world: everything the adapter may see."""
    activate(request.config)
    loaded, case = _loaded_case(request)
    return loaded.world.public_view(loaded.suite, case)


@pytest.fixture
def agentbench_trial(request: pytest.FixtureRequest) -> Trial:
    """The running trial: index, count and seed (index 1 of 1 outside repeats)."""
    from pytest_agentbench.scoring.trials import make_trial

    node = request.node
    case = getattr(node, "case", None)
    suite = getattr(getattr(node, "loaded", None), "suite", None)
    count: int = getattr(node, "trial_count", 1)
    if case is None or suite is None:
        return make_trial("", node.nodeid, None, 1)
    return make_trial(suite.id, case.case_id, getattr(node, "trial", None), count)
