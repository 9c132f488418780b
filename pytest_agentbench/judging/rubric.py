"""A rubric and its panel, in one YAML file beside what they grade.

    rubric:
      name: answer-prose
      question: Is the answer's prose clear, grounded and free of filler?
      scale: {min: 1, max: 5}
      anchors: {1: "...", 3: "...", 5: "..."}
      pass_at: 4
    panel:
      - {provider: local, model: qwen2.5-7b-instruct, settings: {temperature: 0}}
      - ...
    families: {qwen: qwen}        # optional: extends / overrides the family table
    strict_families: false        # optional: refuse a model the table does not know

The panel is family-disjoint from the system under test: a seat whose model
shares a family with the adapter's model is dropped, and the drop is recorded.
Its three seats are of three families. Families come from the maintained table
in :mod:`~pytest_agentbench.judging.families`, which fails closed: a model it
does not know is a warning (``strict_families``: a refusal), never a family of
its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from pytest_agentbench.judging.families import KNOWN_FAMILIES, model_family
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, read_yaml, sha256_hex
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError, field_path

PANEL_SIZE: Final = 3


class Scale(Record):
    min: int
    max: int

    @model_validator(mode="after")
    def _odd_span(self) -> Scale:
        if self.max <= self.min:
            raise ValueError("max must be above min")
        if (self.max - self.min) % 2:
            # An unparsable answer scores the midpoint, so the midpoint must be a point.
            raise ValueError("the scale needs an odd number of points so its midpoint is one")
        return self

    @property
    def midpoint(self) -> int:
        return (self.min + self.max) // 2

    @property
    def points(self) -> tuple[int, ...]:
        return tuple(range(self.min, self.max + 1))


class Rubric(Record):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    question: str = Field(min_length=1)
    scale: Scale
    anchors: dict[int, str]
    pass_at: int
    """A majority score at or above this counts as a pass of the (diagnostic) judged check."""
    content: str = ""
    """JSON pointer (RFC 6901) into the case's output (or its ``view``) to judge; empty:
    all of it."""
    view: str = Field(default="", pattern=r"^([a-z0-9][a-z0-9-]*)?$")
    """A judged view the case's world builds of its output (``judging.views``), judged in
    place of the output; empty: the recorded output itself."""
    fields: tuple[str, ...] = ()
    """What the question asks about, as JSON pointers into the judged content (``*``: every
    element of an array): a rubric asks only what its content shows, and a test holds
    each named field against the judged documents."""

    @field_validator("anchors", "pass_at")
    @classmethod
    def _on_scale(cls, value: dict[int, str] | int, info: ValidationInfo) -> dict[int, str] | int:
        scale = info.data.get("scale")
        if isinstance(scale, Scale):
            given = set(value) if isinstance(value, dict) else {value}
            outside = sorted(given - set(scale.points))
            if outside:
                raise ValueError(f"{outside} off the scale")
        return value


class Seat(Record):
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """Sampling settings sent with every request (``temperature``, ``seed``, ``max_tokens``)."""

    @property
    def seat_id(self) -> str:
        return f"{self.provider}/{self.model}"

    def key(self) -> JsonValue:
        """What identifies the seat's judgments: provider, model and settings."""
        return {"provider": self.provider, "model": self.model, "settings": self.settings}


class DroppedSeat(Record):
    seat: str
    family: str
    reason: str


class JudgedGate(Record):
    """A gate on the judged pass rate: refused unless the panel's majority is calibrated."""

    min_pass_rate: float = Field(ge=0.0, le=1.0)
    min_kappa: float = Field(ge=-1.0, le=1.0)
    """The majority's kappa against human labels must reach this for the gate to count."""


class RubricFile(Record):
    rubric: Rubric
    # Before the panel, which is checked against them.
    families: dict[str, str] = Field(default_factory=dict)
    strict_families: bool = False
    """Refuse (``unknown_model_family``) a seat or model under test of no known family."""
    panel: tuple[Seat, ...]
    gate: JudgedGate | None = None

    @field_validator("panel")
    @classmethod
    def _three_seats_of_three_families(
        cls, panel: tuple[Seat, ...], info: ValidationInfo
    ) -> tuple[Seat, ...]:
        if len(panel) != PANEL_SIZE:
            raise ValueError(f"a panel has {PANEL_SIZE} seats, not {len(panel)}")
        ids = [seat.seat_id for seat in panel]
        if len(set(ids)) != len(ids):
            raise ValueError("two seats name the same provider and model")
        families = {**KNOWN_FAMILIES, **info.data.get("families", {})}
        seen: dict[str, str] = {}
        for seat in panel:
            family = model_family(seat.model, families)
            if family is None:
                continue
            if family in seen:
                raise ValueError(
                    f"seats {seen[family]} and {seat.seat_id} are both of family {family!r}: "
                    "a panel's seats judge independently, one family each"
                )
            seen[family] = seat.seat_id
        return panel

    def digest(self) -> str:
        """The rubric's content digest: a changed question or anchor invalidates cached votes."""
        return sha256_hex(canonical_json(self.rubric.model_dump(mode="json")).encode("utf-8"))

    def family_map(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**KNOWN_FAMILIES, **self.families, **(overrides or {})}

    def seated(
        self, subject_model: str | None, overrides: Mapping[str, str] | None = None
    ) -> tuple[tuple[Seat, ...], tuple[DroppedSeat, ...]]:
        """The seats that may judge ``subject_model``'s output, and the ones dropped."""
        families = self.family_map(overrides)
        if subject_model is None:
            return self.panel, ()
        subject = model_family(subject_model, families)
        kept: list[Seat] = []
        dropped: list[DroppedSeat] = []
        for seat in self.panel:
            family = model_family(seat.model, families)
            if family is not None and family == subject:
                dropped.append(
                    DroppedSeat(
                        seat=seat.seat_id,
                        family=family,
                        reason=f"shares family {family!r} with the model under test",
                    )
                )
            else:
                kept.append(seat)
        return tuple(kept), tuple(dropped)

    def family_warnings(
        self, subject_model: str | None, overrides: Mapping[str, str] | None = None
    ) -> tuple[str, ...]:
        """A line for each model (seat or model under test) of no known family.

        Such a seat cannot be shown independent of the model under test. With
        ``strict_families`` the first one is refused (``unknown_model_family``).
        """
        families = self.family_map(overrides)
        named = [(f"seat {seat.seat_id}", seat.model) for seat in self.panel]
        if subject_model is not None:
            named.append(("the model under test", subject_model))
        warnings: list[str] = []
        for who, model in named:
            if model_family(model, families) is not None:
                continue
            if self.strict_families:
                raise AgentbenchError(
                    "unknown_model_family",
                    f"{who} ({model!r}) is of no known family: add it to the rubric's "
                    "families, or leave strict_families off",
                    field="families",
                )
            warnings.append(
                f"{who} ({model!r}) is of no known family: the panel cannot show its seats "
                "independent of it (declare it under families:)"
            )
        return tuple(warnings)


def missing_fields(document: JsonValue, fields: tuple[str, ...]) -> list[str]:
    """The named fields ``document`` lacks: a key absent where its parent is present.

    ``*`` walks every element of an array (an empty array names nothing); a field
    present with ``null`` is present.
    """
    missing: list[str] = []
    for field in fields:
        found: list[tuple[str, JsonValue]] = [("", document)]
        for raw in field.removeprefix("/").split("/") if field else ():
            part = raw.replace("~1", "/").replace("~0", "~")
            step: list[tuple[str, JsonValue]] = []
            for where, value in found:
                if part == "*" and isinstance(value, list):
                    step.extend((f"{where}/{index}", item) for index, item in enumerate(value))
                elif isinstance(value, dict) and part in value:
                    step.append((f"{where}/{raw}", value[part]))
                elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                    step.append((f"{where}/{raw}", value[int(part)]))
                else:
                    missing.append(f"{where}/{raw}")
            found = step
    return missing


def point(document: JsonValue, pointer: str) -> tuple[bool, JsonValue]:
    """(found, value) at the JSON pointer ``pointer`` inside ``document``."""
    if not pointer:
        return True, document
    value = document
    for raw in pointer.removeprefix("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def load_rubric(path: Path, *, display: str | None = None) -> RubricFile:
    shown = display or path.name
    raw = read_yaml(path, display=shown)
    if not isinstance(raw, dict):
        raise AgentbenchError("invalid_rubric", "a rubric file must be a mapping", file=shown)
    try:
        return RubricFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AgentbenchError(
            "invalid_rubric", first["msg"], file=shown, field=field_path(list(first["loc"]))
        ) from None
