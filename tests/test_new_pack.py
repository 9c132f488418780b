"""``agentbench new-pack``, ``list-packs`` and ``validate-spec``: a domain pack anyone can write.

The worked pack (a heating repair on a quote priced with VAT on top) is graded
here in process against its own example and oracle; the slow test installs the
scaffold as its own distribution, as pip would leave it (its folder on
``PYTHONPATH`` and a ``*.dist-info`` folder holding its entry points, as
``tests/test_new_world.py`` does), and runs its tests, which find the pack by
entry point alone.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.cli.new_pack import scaffold_files, write_scaffold
from pytest_agentbench.cli.pack_template import agents
from pytest_agentbench.cli.pack_template.pack import PACK
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.operations.control_oracle import load_control_oracle
from pytest_agentbench.worlds.operations.episode import run_episode
from pytest_agentbench.worlds.operations.evaluation import evaluate_episode
from pytest_agentbench.worlds.operations.gate import bind_control_oracle
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.replay import replay_codes
from pytest_agentbench.worlds.operations.spec import load_operation_spec

TEMPLATE = Path(__file__).resolve().parents[1] / "pytest_agentbench" / "cli" / "pack_template"


def test_the_worked_pack_holds_its_own_oracle_on_its_example() -> None:
    packs = {**installed_packs(), PACK.operation_type: PACK}
    loaded = load_operation_spec(TEMPLATE / "example" / "operation.yaml", "operation.yaml", packs)
    oracle = load_control_oracle(
        TEMPLATE / "example" / "controls.yaml", "controls.yaml", PACK.oracle_model
    )
    bind_control_oracle(oracle, loaded)
    for scenario in ("V1", "V2"):
        record = run_episode(loaded, scenario, PACK.reference_agent())
        spec = loaded.spec.scenarios[scenario]
        vector = evaluate_episode(record, PACK, spec, replay_codes(loaded, record))
        assert vector.reliable, (scenario, vector.as_json())
    factories = {agent.agent_id: agent.factory for agent in PACK.negative_agents()}
    for control in oracle.oracle.controls:
        record = run_episode(loaded, control.scenario_id, factories[control.agent_id]())
        spec = loaded.spec.scenarios[control.scenario_id]
        vector = evaluate_episode(record, PACK, spec, replay_codes(loaded, record))
        failed = {d.name for d in vector.dimensions if d.codes}
        codes = {code for d in vector.dimensions for code in d.codes}
        assert not vector.reliable
        assert failed == set(control.expected_failed_dimensions), control.agent_id
        assert set(control.required_finding_codes) <= codes, control.agent_id
    # VAT is what the threshold is held against: 180.00 net is 216.00 gross, above 200.00.
    assert loaded.spec.policy["approval_threshold_minor"] == 20000
    assert {agent.agent_id for agent in PACK.negative_agents()} == {
        "vat_blind",
        "trusts_the_engineer",
    }
    assert isinstance(PACK.reference_agent(), agents.ReferenceAgent)


def test_the_pack_imports_nothing_of_ours_but_the_sdk() -> None:
    for source in sorted(TEMPLATE.glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                ours = node.module.startswith("pytest_agentbench")
                assert not ours or node.module == "pytest_agentbench.sdk", (source, node.module)


def test_the_scaffold_names_its_own_operation_type_everywhere(tmp_path: Path) -> None:
    files = scaffold_files("boiler-fix")
    assert sorted(files) == [
        "boiler_fix/__init__.py",
        "boiler_fix/agents.py",
        "boiler_fix/grading.py",
        "boiler_fix/operation.py",
        "boiler_fix/pack.py",
        "boiler_fix/vocabulary.py",
        "examples/boiler-fix/controls.yaml",
        "examples/boiler-fix/operation.yaml",
        "pyproject.toml",
        "tests/conftest.py",
        "tests/test_pack.py",
    ]
    joined = "".join(files.values())
    assert "heating.repair.synthetic" not in joined
    assert 'OPERATION_TYPE = "boiler.fix.synthetic"' in files["boiler_fix/vocabulary.py"]
    assert "operation_type: boiler.fix.synthetic" in files["examples/boiler-fix/operation.yaml"]
    pyproject = tomllib.loads(files["pyproject.toml"])
    assert pyproject["project"]["entry-points"]["pytest_agentbench.operations_packs"] == {
        "boiler-fix": "boiler_fix.pack:PACK"
    }
    assert main(["new-pack", "boiler-fix", "-C", str(tmp_path)]) == 0
    with pytest.raises(AgentbenchError) as again:
        write_scaffold("boiler-fix", tmp_path)
    assert again.value.code == "target_exists"
    with pytest.raises(AgentbenchError) as bad:
        scaffold_files("Boiler Fix")
    assert bad.value.code == "invalid_pack_name"


def test_list_packs_and_validate_spec(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["list-packs"]) == 0
    out = capsys.readouterr().out
    assert "lettings.maintenance.synthetic\t1.0.0\tlettings-maintenance = " in out
    spec = Path(__file__).resolve().parents[1] / "suites" / "operations-maintenance-v1"
    assert main(["validate-spec", str(spec / "operation.yaml"), "--json"]) == 0
    assert '"scenarios": ["V1", "V2", "V3"]' in capsys.readouterr().out
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (spec / "operation.yaml").read_text(encoding="utf-8").replace("actor: tenant", "actor: x"),
        encoding="utf-8",
    )
    assert main(["validate-spec", str(broken)]) == 1
    assert capsys.readouterr().err.startswith(f"agentbench: [unknown_actor] {broken}:")


def _install_as_pip_would(project: Path, site: Path) -> None:
    metadata = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    declared = metadata["project"]
    dist_info = site / f"{declared['name'].replace('-', '_')}-{declared['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {declared['name']}\nVersion: {declared['version']}\n",
        encoding="utf-8",
    )
    lines = [
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
        for group, points in declared["entry-points"].items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.slow
def test_an_outside_pack_installs_and_runs_by_entry_point(tmp_path: Path) -> None:
    project = write_scaffold("heating-repair", tmp_path)
    site = tmp_path / "site"
    _install_as_pip_would(project, site)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), str(site), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 passed" in done.stdout
