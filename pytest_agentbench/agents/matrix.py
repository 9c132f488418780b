"""Model matrices: several models in one run, each with its own settings, budget and cassettes.

``--agentbench-model NAME`` (repeatable) or ``--agentbench-models FILE`` (YAML or
JSON) names the models; every case then runs once per model. A model's entry may
set what differs from the run's settings (endpoint, temperature, seed, the
per-call token bound, its price); everything else is the run's. Each model is a
run of its own: its settings and their digest, its budget tally and rate-limit
window, and its cassettes in a folder of its own under the run's cassette folder.

The file is read through the project's bounded readers (size, depth, aliases,
duplicate keys refused by name) and then validated strictly: an unknown key, a
bad value or a repeated name is a usage error naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field, StrictStr, ValidationError

from pytest_agentbench.agents.budget import ModelPrice
from pytest_agentbench.agents.settings import ChatSettings, refuse_credentials
from pytest_agentbench.sdk.canonical import JsonValue, read_json, read_yaml
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError

MODELS_SCHEME = "agentbench-models/1"
MAX_MODELS = 64
"""The most models one run may compare: each multiplies the run's items."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A model's name in item ids (``case[model=NAME]``), folders and reports."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class MatrixModel(Record):
    """One model of a matrix: its name and the settings it changes."""

    model_config = BUILT_ON_FIRST_USE

    name: str = Field(pattern=NAME_PATTERN)
    """How items, folders and reports name it."""
    model: StrictStr | None = Field(default=None, min_length=1, max_length=256)
    """What requests name as ``model``; defaults to ``name``."""
    base_url: StrictStr | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, allow_inf_nan=False)
    seed: int | None = None
    max_tokens_per_call: int | None = Field(default=None, ge=1)
    pricing: ModelPrice | None = None
    """Its price, in the currency of the run's pricing table if there is one."""

    @property
    def sent_model(self) -> str:
        return self.model or self.name


class ModelsFile(Record):
    model_config = BUILT_ON_FIRST_USE

    scheme: StrictStr = Field(default=MODELS_SCHEME, pattern=r"^agentbench-models/1$")
    models: tuple[MatrixModel, ...] = Field(min_length=1, max_length=MAX_MODELS)


def label_of(model: str) -> str:
    """The name a model given on the command line gets in ids: unsafe characters as ``-``."""
    label = _UNSAFE.sub("-", model).strip("-.")[:64]
    return label or "model"


def read_models_file(path: Path) -> tuple[MatrixModel, ...]:
    """The models of ``path`` (``.json``, else YAML), validated; refusals name file and field."""
    display = str(path)
    if not path.is_file():
        raise UsageError("models_file_missing", "no such file (a models file)", file=display)
    data: JsonValue
    try:
        data = (
            read_json(path, display=display)
            if path.suffix == ".json"
            else read_yaml(path, display=display)
        )
    except AgentbenchError as exc:
        where = exc.location
        raise UsageError(
            exc.code, exc.reason, file=display, line=where.line, field=where.field
        ) from None
    try:
        parsed = ModelsFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(
            "invalid_models_file",
            first["msg"],
            file=display,
            field=".".join(str(part) for part in first["loc"]) or None,
        ) from None
    for index, entry in enumerate(parsed.models):
        why = refuse_credentials(entry.base_url)
        if why is not None:
            raise UsageError(
                "llm_base_url_credentials", why, file=display, field=f"models.{index}.base_url"
            )
    _refuse_duplicates(parsed.models, file=display)
    return parsed.models


def models_from_names(names: Sequence[str]) -> tuple[MatrixModel, ...]:
    """``--agentbench-model`` values: each model as sent, named by its safe label."""
    models = tuple(
        MatrixModel(name=label_of(name), model=None if label_of(name) == name else name)
        for name in names
    )
    if len(models) > MAX_MODELS:
        raise UsageError(
            "invalid_models_file",
            f"{len(models)} models, over the limit of {MAX_MODELS}",
            field="--agentbench-model",
        )
    _refuse_duplicates(models, file=None)
    return models


def _refuse_duplicates(models: Sequence[MatrixModel], *, file: str | None) -> None:
    seen: set[str] = set()
    for index, entry in enumerate(models):
        if entry.name in seen:
            raise UsageError(
                "duplicate_model",
                f"model {entry.name!r} is named twice",
                file=file,
                field=f"models.{index}.name" if file else "--agentbench-model",
            )
        seen.add(entry.name)


def resolve_matrix(
    names: Sequence[str] | None, models_file: str | None, root: Path
) -> tuple[MatrixModel, ...]:
    """The models named; empty when none is. A single model is returned as named: the
    plugin makes it the run's model rather than a matrix."""
    if names and models_file:
        raise UsageError(
            "model_matrix_conflict",
            "give --agentbench-model or --agentbench-models, not both",
            field="--agentbench-models",
        )
    if models_file:
        return read_models_file((root / models_file).resolve())
    if names:
        return models_from_names(names)
    return ()


def model_settings(base: ChatSettings, entry: MatrixModel) -> ChatSettings:
    """The run's settings with what ``entry`` changes, and its cassettes in a folder of its own."""
    update: dict[str, object] = {"model": entry.sent_model}
    for name in ("base_url", "temperature", "seed", "max_tokens_per_call"):
        value = getattr(entry, name)
        if value is not None:
            update[name] = value
    if base.cassettes is not None:
        update["cassettes"] = base.cassettes / entry.name
    # model_copy does not validate: the entry's own fields were validated when it was read.
    return base.model_copy(update=update)
