"""Calibration: how far a judge or classifier agrees with human labels (Cohen's kappa).

Each rater (a panel seat, the panel's majority, a world's deterministic
classifier) is compared with the human labels on the items both labelled.
Kappa on a handful of items says little (two agreeing labels give 1.000), so a
rater is ``calibrated`` only from ``min_labels`` labelled items on (default
:data:`DEFAULT_MIN_LABELS`); below that it is ``uncalibrated`` and says how many
labels it has. Ordered categories (a rubric's 1-5 scale) take quadratic-weighted
kappa, where a 4 against a 5 is a small disagreement and a 1 against a 5 a large
one; unordered ones (a classifier's labels) plain kappa. Each figure comes with
a seeded bootstrap interval, and a gate on kappa holds the interval's lower
bound to its floor (:func:`require_calibrated`), never the point estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from pytest_agentbench.scoring.stats import (
    cohens_kappa,
    kappa_interval,
    quadratic_weighted_kappa,
    seed_for,
)
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import AgentbenchError

UNCALIBRATED: Final = "uncalibrated"
DEFAULT_MIN_LABELS: Final = 30
"""Labelled items a rater needs before it counts as calibrated."""
CONFIDENCE: Final = 0.95
Weighting = Literal["none", "quadratic"]


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
    weighting: Weighting = "none"
    """``quadratic`` for ordered categories (a rubric's scale), ``none`` otherwise."""
    interval: tuple[float, float] | None = None
    """The kappa's 95% percentile bootstrap interval over the labelled items (seeded
    by the rater's name); ``None`` when kappa is undefined."""
    min_labels: int = DEFAULT_MIN_LABELS
    """Labelled items needed before the rater counts as calibrated."""
    stale: int = 0
    """Human labels given to other content or another rubric version: shown, not counted."""

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
        stale = f"; {self.stale} stale labels not counted" if self.stale else ""
        if self.support == 0:
            return f"{self.rater}: {UNCALIBRATED} (no human labels{stale})"
        figure = f"{self.figure()} on {self.support} labels"
        if self.status == UNCALIBRATED:
            return (
                f"{self.rater}: {UNCALIBRATED} ({self.support} of the {self.min_labels} "
                f"labels needed; {figure}{stale})"
            )
        return f"{self.rater}: {figure}{stale}"

    def figure(self) -> str:
        """The kappa with its interval: ``kappa 0.812 [0.701, 0.903] (quadratic-weighted)``."""
        if self.kappa is None:
            return "kappa undefined"
        interval = (
            "" if self.interval is None else f" [{self.interval[0]:.3f}, {self.interval[1]:.3f}]"
        )
        weighted = " (quadratic-weighted)" if self.weighting == "quadratic" else ""
        return f"kappa {self.kappa:.3f}{interval}{weighted}"

    @property
    def lower_bound(self) -> float | None:
        """What a gate holds to its floor: the interval's lower bound (else the kappa)."""
        return self.kappa if self.interval is None else self.interval[0]


def calibrate(
    rater: str,
    human: Mapping[str, str],
    predicted: Mapping[str, str],
    categories: Sequence[str] | None = None,
    *,
    ordinal: bool = False,
    min_labels: int = DEFAULT_MIN_LABELS,
    stale: int = 0,
) -> Calibration:
    """Kappa of ``predicted`` against ``human`` over the item ids both hold.

    ``ordinal``: the categories are ordered (in ``categories`` order), and kappa
    is quadratic-weighted. Calibrated only from ``min_labels`` shared items on.
    """
    if min_labels < 1:
        raise ValueError(f"min_labels must be at least 1, got {min_labels}")
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
            weighting="quadratic" if ordinal else "none",
            min_labels=min_labels,
            stale=stale,
        )
    agreed = sum(confusion[i][i] for i in range(len(names)))
    measure = quadratic_weighted_kappa if ordinal else cohens_kappa
    kappa = measure(confusion)
    interval = (
        None
        if kappa is None
        else kappa_interval(confusion, measure, seed=seed_for(rater), confidence=CONFIDENCE)
    )
    enough = len(shared) >= min_labels and kappa is not None
    return Calibration(
        rater=rater,
        status="calibrated" if enough else UNCALIBRATED,
        support=len(shared),
        categories=names,
        confusion=tuple(tuple(row) for row in confusion),
        kappa=kappa,
        agreement=agreed / len(shared),
        weighting="quadratic" if ordinal else "none",
        interval=interval,
        min_labels=min_labels,
        stale=stale,
    )


def require_calibrated(
    calibration: Calibration | None, *, gate: str, min_kappa: float
) -> Calibration:
    """Refuse a gate on a judged metric unless its judge is calibrated well enough.

    Calibrated means labelled on at least its ``min_labels`` items; well enough
    means the lower bound of its kappa's interval reaches ``min_kappa``.
    """
    if calibration is None or calibration.status == UNCALIBRATED:
        shown = "" if calibration is None else f" ({calibration.describe()})"
        raise AgentbenchError(
            "uncalibrated_judge_gate",
            "a gate on a judged metric needs a calibrated judge (agentbench calibrate)" + shown,
            field=gate,
        )
    lower = calibration.lower_bound
    if lower is None or lower < min_kappa:
        raise AgentbenchError(
            "judge_below_kappa_floor",
            f"{calibration.rater} has {calibration.figure()}: the interval's lower bound is "
            f"below the gate's floor {min_kappa}",
            field=gate,
        )
    return calibration
