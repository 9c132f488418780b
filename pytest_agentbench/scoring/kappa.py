"""Calibration: how far a judge or classifier agrees with human labels (Cohen's kappa).

Each rater (a panel seat, the panel's majority, a world's deterministic
classifier) is compared with the human labels on the items both labelled. A
rater with no labelled items is ``uncalibrated``, and says so wherever its
numbers are shown; only a calibrated rater whose kappa reaches the declared
floor may back a gate (:func:`require_calibrated`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from pytest_agentbench.scoring.stats import cohens_kappa
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import AgentbenchError

UNCALIBRATED: Final = "uncalibrated"


class Calibration(Record):
    model_config = BUILT_ON_FIRST_USE

    rater: str
    status: Literal["calibrated", "uncalibrated"]
    support: int
    """Items carrying both a human label and this rater's label."""
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]
    """Rows: the human label; columns: the rater's label; in ``categories`` order."""
    kappa: float | None
    agreement: float | None

    @classmethod
    def uncalibrated(cls, rater: str) -> Calibration:
        """A rater no human label is known for."""
        return cls(
            rater=rater,
            status=UNCALIBRATED,
            support=0,
            categories=(),
            confusion=(),
            kappa=None,
            agreement=None,
        )

    def describe(self) -> str:
        if self.status == UNCALIBRATED:
            return f"{self.rater}: {UNCALIBRATED} (no human labels)"
        shown = "undefined" if self.kappa is None else f"{self.kappa:.3f}"
        return f"{self.rater}: kappa {shown} on {self.support} labels"


def calibrate(
    rater: str,
    human: Mapping[str, str],
    predicted: Mapping[str, str],
    categories: Sequence[str] | None = None,
) -> Calibration:
    """Kappa of ``predicted`` against ``human`` over the item ids both hold."""
    shared = sorted(set(human) & set(predicted))
    names = tuple(
        categories
        if categories is not None
        else sorted({human[item] for item in shared} | {predicted[item] for item in shared})
    )
    index = {name: position for position, name in enumerate(names)}
    confusion = [[0] * len(names) for _ in names]
    for item in shared:
        for label in (human[item], predicted[item]):
            if label not in index:
                raise AgentbenchError(
                    "invalid_labels", f"label {label!r} is not a category", field=item
                )
        confusion[index[human[item]]][index[predicted[item]]] += 1
    if not shared:
        return Calibration(
            rater=rater,
            status=UNCALIBRATED,
            support=0,
            categories=names,
            confusion=tuple(tuple(row) for row in confusion),
            kappa=None,
            agreement=None,
        )
    agreed = sum(confusion[i][i] for i in range(len(names)))
    return Calibration(
        rater=rater,
        status="calibrated",
        support=len(shared),
        categories=names,
        confusion=tuple(tuple(row) for row in confusion),
        kappa=cohens_kappa(confusion),
        agreement=agreed / len(shared),
    )


def require_calibrated(
    calibration: Calibration | None, *, gate: str, min_kappa: float
) -> Calibration:
    """Refuse a gate on a judged metric unless its judge is calibrated well enough."""
    if calibration is None or calibration.status == UNCALIBRATED:
        raise AgentbenchError(
            "uncalibrated_judge_gate",
            "a gate on a judged metric needs a calibrated judge (agentbench calibrate)",
            field=gate,
        )
    if calibration.kappa is None or calibration.kappa < min_kappa:
        shown = "undefined" if calibration.kappa is None else f"{calibration.kappa:.3f}"
        raise AgentbenchError(
            "judge_below_kappa_floor",
            f"{calibration.rater} has kappa {shown}, below the gate's floor {min_kappa}",
            field=gate,
        )
    return calibration
