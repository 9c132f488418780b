"""The normal quantile and the Wilson score interval: what a metric's interval needs.

They sit in the SDK because :func:`~pytest_agentbench.sdk.metrics.aggregate`, which
worlds call, attaches a Wilson interval to every rate; the rest of the statistics
(bootstraps, exact tests, kappa) stay in ``pytest_agentbench.scoring.stats``.
"""

from __future__ import annotations

import math

# Standard normal CDF underflows to zero a little beyond 38 standard deviations,
# so this bracket holds the quantile of every probability a float can express.
_QUANTILE_BRACKET = 40.0


def check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_quantile(probability: float) -> float:
    """Inverse of the standard normal CDF, found by bisection on ``math.erfc``.

    Bisection is slower than a rational approximation but needs no tabulated
    coefficients and converges to the last representable float, which keeps
    the result exact well beyond the six places interval widths need.
    """
    if not 0.0 < probability < 1.0:
        raise ValueError(f"probability must lie strictly between 0 and 1, got {probability!r}")
    low, high = -_QUANTILE_BRACKET, _QUANTILE_BRACKET
    while True:
        middle = (low + high) / 2.0
        if middle in (low, high):
            return middle
        cdf = _normal_cdf(middle)
        if cdf == probability:
            return middle
        if cdf < probability:
            low = middle
        else:
            high = middle


def wilson_interval(
    successes: int, trials: int, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion; ``None`` when there are no trials."""
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    check_confidence(confidence)
    if trials == 0:
        return None
    z = normal_quantile((1.0 + confidence) / 2.0)
    z_squared = z * z
    proportion = successes / trials
    denominator = 1.0 + z_squared / trials
    centre = (proportion + z_squared / (2.0 * trials)) / denominator
    half_width = (z / denominator) * math.sqrt(
        proportion * (1.0 - proportion) / trials + z_squared / (4.0 * trials * trials)
    )
    # At 0 or n successes the bound is exactly the observed proportion; rounding
    # would otherwise leave it a hair inside and exclude the point estimate.
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == trials else min(1.0, centre + half_width)
    return low, high
