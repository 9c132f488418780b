from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.suite import Suite, SuiteConfig, load_suite_config, pydantic_refusal

MINIMAL = "id: demo-suite\nversion: 1.0.0\nworld: demo\ntitle: Demo\n"
DISPLAY = "suites/demo-suite/suite.yaml"


def load(tmp_path: Path, text: str) -> SuiteConfig:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite_config(path, DISPLAY)


def refusal(tmp_path: Path, text: str) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        load(tmp_path, text)
    assert caught.value.location.file == DISPLAY
    return caught.value


def test_a_minimal_suite_gets_documented_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, MINIMAL)
    assert (config.id, config.version, config.world, config.title) == (
        "demo-suite",
        "1.0.0",
        "demo",
        "Demo",
    )
    assert config.oracle is None
    assert config.options == {}
    assert config.metrics is None
    assert config.gates == ()
    assert config.description == ""


def test_optional_fields_are_read(tmp_path: Path) -> None:
    text = MINIMAL + (
        "oracle: ../truth\noptions: {depth: 2}\nmetrics: [accuracy]\ngates: ['accuracy >= 0.5']\n"
    )
    config = load(tmp_path, text)
    assert config.oracle == "../truth"
    assert config.options == {"depth": 2}
    assert config.metrics == ("accuracy",)
    assert config.gates == ("accuracy >= 0.5",)


def test_an_unknown_field_is_refused_by_name(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + "colour: blue\n")
    assert error.code == "unknown_field"
    assert error.location.field == "colour"
    assert error.render() == f"[unknown_field] {DISPLAY}: colour: unknown field"


@pytest.mark.parametrize("bad_id", ["Demo", "-demo", "demo suite", "démo", "_x", "a/b"])
def test_a_badly_shaped_id_is_refused(tmp_path: Path, bad_id: str) -> None:
    error = refusal(tmp_path, MINIMAL.replace("id: demo-suite", f"id: '{bad_id}'"))
    assert error.code == "invalid_field"
    assert error.location.field == "id"
    assert "lowercase" in error.reason


@pytest.mark.parametrize("good_id", ["a", "0day", "asteria-authored-v1", "x.y_z-1"])
def test_well_shaped_ids_are_accepted(tmp_path: Path, good_id: str) -> None:
    assert load(tmp_path, MINIMAL.replace("demo-suite", good_id)).id == good_id


@pytest.mark.parametrize("field", ["id", "version", "world", "title"])
def test_a_missing_required_field_is_refused_by_name(tmp_path: Path, field: str) -> None:
    text = "".join(line + "\n" for line in MINIMAL.splitlines() if not line.startswith(field))
    error = refusal(tmp_path, text)
    assert error.code == "missing_field"
    assert error.location.field == field
    assert error.reason == "required field is missing"


def test_a_field_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + "gates: accuracy >= 0.5\n")
    assert error.code == "invalid_field"
    assert error.location.field == "gates"


def test_a_wrong_type_inside_a_list_names_the_index(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + "metrics: [accuracy, {a: 1}]\n")
    assert error.code == "invalid_field"
    assert error.location.field == "metrics[1]"


def test_a_numeric_version_is_refused_rather_than_coerced(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL.replace("version: 1.0.0", "version: 1.0"))
    assert error.code == "invalid_field"
    assert error.location.field == "version"


@pytest.mark.parametrize("text", ["", "- id: demo\n", "just text\n"])
def test_a_document_that_is_not_a_mapping_is_refused(tmp_path: Path, text: str) -> None:
    error = refusal(tmp_path, text)
    assert error.code == "invalid_field"
    assert "mapping" in error.reason


def test_a_duplicate_key_is_refused_with_its_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + "world: other\n")
    assert error.code == "duplicate_key"
    assert error.location.line == 5


def test_malformed_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + "gates: [a\n")
    assert error.code == "malformed_yaml"
    assert error.location.line is not None


def test_a_missing_suite_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentbenchError) as caught:
        load_suite_config(tmp_path / "suite.yaml", DISPLAY)
    assert caught.value.code == "missing_file"


def test_pydantic_refusal_keeps_a_given_code_and_line() -> None:
    with pytest.raises(ValidationError) as caught:
        SuiteConfig.model_validate({"id": "x", "version": "1", "world": "w", "title": 3})
    error = pydantic_refusal(caught.value, file="cases.jsonl", code="invalid_case", line=12)
    assert error.code == "invalid_case"
    assert error.location.line == 12
    assert error.location.field == "title"


def test_pydantic_refusal_of_a_root_error_names_the_root() -> None:
    with pytest.raises(ValidationError) as caught:
        SuiteConfig.model_validate(["not", "a", "mapping"])
    assert pydantic_refusal(caught.value, file="f").location.field == "<root>"


def suite(tmp_path: Path, oracle: str | None, display_root: str) -> Suite:
    config = SuiteConfig(id="demo-suite", version="1", world="demo", title="t", oracle=oracle)
    root = tmp_path / "suites" / "demo-suite"
    return Suite(config=config, root=root, display_root=display_root)


def test_the_default_oracle_folder_is_beside_the_suites_folder(tmp_path: Path) -> None:
    found = suite(tmp_path, None, "suites/demo-suite")
    assert found.oracle_root == (tmp_path / "oracles" / "demo-suite").resolve()
    assert found.id == "demo-suite"


def test_a_declared_oracle_folder_is_relative_to_the_suite(tmp_path: Path) -> None:
    found = suite(tmp_path, "truth", "suites/demo-suite")
    assert found.oracle_root == (tmp_path / "suites" / "demo-suite" / "truth").resolve()


def test_display_prefixes_the_display_root_when_there_is_one(tmp_path: Path) -> None:
    assert suite(tmp_path, None, "suites/demo-suite").display("cases.jsonl") == (
        "suites/demo-suite/cases.jsonl"
    )
    assert suite(tmp_path, None, "").display("cases.jsonl") == "cases.jsonl"
