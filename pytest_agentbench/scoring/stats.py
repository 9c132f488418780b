"""Small-sample statistics for comparing agents on a benchmark.

Pure Python on purpose: the plugin must not pull numpy or scipy into a user's
test environment just to put a confidence interval on a pass rate. Every
function is deterministic (the bootstrap takes an explicit seed) so that run
reports are byte-identical across reruns.

Invalid arguments are programming mistakes of the caller, not bad benchmark
input, so they raise :class:`ValueError` rather than a located refusal.
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import chain, islice
from typing import NamedTuple

from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.intervals import check_confidence


class BootstrapResult(Record):
    """Mean of the paired differences ``a[i] - b[i]`` and its percentile interval."""

    model_config = BUILT_ON_FIRST_USE

    mean_difference: float
    low: float
    high: float


class HolmResult(Record):
    """One hypothesis after Holm-Bonferroni: raw and adjusted p-value, and the verdict."""

    model_config = BUILT_ON_FIRST_USE

    p_value: float
    adjusted_p: float
    rejected: bool


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (the common "type 7" definition)."""
    position = fraction * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * weight


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Percentile bootstrap interval for ``mean(a - b)`` over paired units.

    Units (cases) are resampled with replacement, keeping each pair together,
    so per-case difficulty cancels out of the difference.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} != {len(b)}")
    if not a:
        raise ValueError("paired samples are empty")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    check_confidence(confidence)
    differences = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    if not all(math.isfinite(d) for d in differences):
        raise ValueError("paired samples contain a non-finite value")
    count = len(differences)
    rng = random.Random(seed)
    resampled_means = sorted(
        math.fsum(rng.choices(differences, k=count)) / count for _ in range(resamples)
    )
    tail = (1.0 - confidence) / 2.0
    return BootstrapResult(
        mean_difference=math.fsum(differences) / count,
        low=_percentile(resampled_means, tail),
        high=_percentile(resampled_means, 1.0 - tail),
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts.

    ``b`` counts units only the first system got right, ``c`` units only the
    second got right. Under the null each discordant pair is a fair coin, so
    the p-value is twice the smaller binomial tail, computed in exact integers.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    discordant = b + c
    if discordant == 0:
        return 1.0
    smaller_tail = sum(math.comb(discordant, k) for k in range(min(b, c) + 1))
    p_value = Fraction(2 * smaller_tail, 2**discordant)
    return float(min(p_value, Fraction(1)))


def holm_bonferroni(p_values: Mapping[str, float], alpha: float = 0.05) -> dict[str, HolmResult]:
    """Holm's step-down correction over a family of named hypotheses.

    Adjusted p-values are ``max_{j<=i} min(1, (m - j) * p_(j))`` over the
    ascending order, so they never decrease along it; a hypothesis is rejected
    when its adjusted p-value is at most ``alpha``, which is exactly Holm's
    stop-at-first-acceptance rule. Ties in p are ordered by name to keep the
    result independent of the mapping's order.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    for name, p in p_values.items():
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value of {name!r} must lie in [0, 1], got {p!r}")
    ordered = sorted(p_values.items(), key=lambda item: (item[1], item[0]))
    family_size = len(ordered)
    adjusted: dict[str, float] = {}
    running_max = 0.0
    for rank, (name, p) in enumerate(ordered):
        running_max = max(running_max, min(1.0, (family_size - rank) * p))
        adjusted[name] = running_max
    return {
        name: HolmResult(p_value=p, adjusted_p=adjusted[name], rejected=adjusted[name] <= alpha)
        for name, p in p_values.items()
    }


def cohens_kappa(confusion: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of two raters from a square confusion matrix of counts.

    Rows are the first rater's categories, columns the second's. ``None`` when
    kappa is undefined: no ratings at all, or chance agreement of exactly 1
    (both raters always used the same single category).
    """
    size = len(confusion)
    for index, row in enumerate(confusion):
        if len(row) != size:
            raise ValueError(f"confusion matrix is not square: row {index} has {len(row)} cells")
        if any(cell < 0 for cell in row):
            raise ValueError(f"confusion matrix row {index} has a negative count")
    total = sum(sum(row) for row in confusion)
    if total == 0:
        return None
    observed = Fraction(sum(confusion[i][i] for i in range(size)), total)
    row_totals = [sum(row) for row in confusion]
    column_totals = [sum(row[j] for row in confusion) for j in range(size)]
    expected = Fraction(
        sum(r * c for r, c in zip(row_totals, column_totals, strict=True)), total * total
    )
    if expected == 1:
        return None
    return float((observed - expected) / (1 - expected))


def quadratic_weighted_kappa(confusion: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa with quadratic disagreement weights, for ordered categories.

    A 4 against a 5 costs a sixteenth of a 1 against a 5 on a five-point scale,
    where unweighted kappa counts both as a plain disagreement. Rows and columns
    are the categories in their order. ``None`` when undefined: no ratings, or
    no disagreement expected by chance (every rating in one category).
    """
    size = len(confusion)
    for index, row in enumerate(confusion):
        if len(row) != size:
            raise ValueError(f"confusion matrix is not square: row {index} has {len(row)} cells")
        if any(cell < 0 for cell in row):
            raise ValueError(f"confusion matrix row {index} has a negative count")
    total = sum(sum(row) for row in confusion)
    if total == 0 or size < 2:
        return None
    row_totals = [sum(row) for row in confusion]
    column_totals = [sum(row[j] for row in confusion) for j in range(size)]
    observed = Fraction(0)
    expected = Fraction(0)
    for i in range(size):
        for j in range(size):
            weight = (i - j) ** 2
            observed += weight * confusion[i][j]
            expected += Fraction(weight * row_totals[i] * column_totals[j], total)
    if expected == 0:
        return None
    return float(1 - observed / expected)


def kappa_interval(
    confusion: Sequence[Sequence[int]],
    kappa: Callable[[Sequence[Sequence[int]]], float | None],
    *,
    seed: int,
    resamples: int = 1000,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of ``kappa`` over the labelled items.

    Each resample draws as many items as were labelled, with replacement; an
    item only matters through its (human, rater) cell, so a resample is a
    multinomial draw over the confusion matrix's cells. Resamples whose kappa
    is undefined are left out; ``None`` when none is defined.
    """
    check_confidence(confidence)
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    size = len(confusion)
    cells = [cell for row in confusion for cell in row]
    total = sum(cells)
    if total == 0:
        return None
    rng = random.Random(seed)
    draws = _Multinomial(cells).draws(rng, total)
    values: list[float] = []
    for counts in islice(draws, resamples):
        resampled = [list(counts[row * size : (row + 1) * size]) for row in range(size)]
        value = kappa(resampled)
        if value is not None:
            values.append(value)
    if not values:
        return None
    values.sort()
    tail = (1 - confidence) / 2
    return _percentile(values, tail), _percentile(values, 1 - tail)


# --- cluster bootstrap of ratio metrics --------------------------------------
#
# A resample of n units drawn with replacement only matters through how many
# copies of each distinct unit value it holds: a multinomial draw over the
# distinct values. Benchmark units carry small integer counts, so a metric has a
# handful of distinct (numerator, denominator) pairs per side however many cases
# the suite has, and a resample costs a few binomial draws instead of n index
# draws. Python 3.11's ``random`` has no binomial sampler, hence the one below.


_GAP_METHOD_BELOW_MEAN = 10.0
"""A binomial draw whose mean is below this counts geometric gaps; above, BTRS."""


def _gap_successes(uniform: Callable[[], float], trials: int, log_q: float) -> int:
    """Devroye's geometric gaps: successes before the gaps add past ``trials``.

    ``log_q`` is ``log1p(-p)`` of the success probability ``p`` (at most one half).
    """
    successes = position = 0
    while True:
        position += math.floor(math.log(1.0 - uniform()) / log_q) + 1
        if position > trials:
            return successes
        successes += 1


def binomial_variate(rng: random.Random, trials: int, probability: float) -> int:
    """One Binomial(trials, probability) draw from ``rng``.

    Small means use Devroye's geometric-gap method (the number of successes
    before the gaps add past ``trials``); large ones Hörmann's BTRS transformed
    rejection with squeeze (1993), whose cost does not grow with ``trials``.
    """
    if trials < 0:
        raise ValueError(f"trials must be non-negative, got {trials}")
    if probability <= 0.0 or trials == 0:
        return 0
    if probability >= 1.0:
        return trials
    if probability > 0.5:
        return trials - binomial_variate(rng, trials, 1.0 - probability)
    if trials * probability < _GAP_METHOD_BELOW_MEAN:
        return _gap_successes(rng.random, trials, math.log1p(-probability))
    spread = math.sqrt(trials * probability * (1.0 - probability))
    b = 1.15 + 2.53 * spread
    a = -0.0873 + 0.0248 * b + 0.01 * probability
    c = trials * probability + 0.5
    v_r = 0.92 - 4.2 / b
    exact: tuple[float, float, int, float] | None = None
    while True:
        u = rng.random() - 0.5
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > trials:
            continue
        v = rng.random()
        if us >= 0.07 and v <= v_r:
            return k
        # The squeeze accepts most draws; the exact test's constants wait until needed.
        if exact is None:
            mode = math.floor((trials + 1) * probability)
            exact = (
                (2.83 + 5.1 / b) * spread,
                math.log(probability / (1.0 - probability)),
                mode,
                math.lgamma(mode + 1) + math.lgamma(trials - mode + 1),
            )
        alpha, log_odds, mode, log_mode = exact
        v *= alpha / (a / (us * us) + b)
        if v > 0.0 and math.log(v) <= (
            log_mode - math.lgamma(k + 1) - math.lgamma(trials - k + 1) + (k - mode) * log_odds
        ):
            return k


def multinomial_counts(rng: random.Random, total: int, weights: Sequence[int]) -> list[int]:
    """How many of ``total`` draws with replacement fall in each class of integer ``weights``.

    Conditional binomials: class ``i`` takes Binomial(remaining draws,
    w_i / remaining weight), which is exactly the multinomial distribution.
    """
    return list(_Multinomial(weights).draw(rng, total))


class _ConditionalStep(NamedTuple):
    """One class's binomial in a multinomial draw, with what :func:`binomial_variate` derives."""

    probability: float
    """``w_i / remaining weight``, the argument :func:`binomial_variate` takes."""
    gap_probability: float
    """The smaller of ``probability`` and its complement: the one the geometric gaps count."""
    complemented: bool
    log_q: float
    """``log1p(-gap_probability)``; 0.0 when ``probability`` is 0 or 1 (no gaps to count)."""


class _Multinomial:
    """Repeated multinomial draws over fixed weights, as :func:`multinomial_counts` makes them.

    A bootstrap draws thousands of times over the same weights, so the
    conditional probabilities and the logarithms of the small-mean binomial
    path are worked out once here, and that path runs inline. It consumes the
    random stream exactly as :func:`binomial_variate` would, so every draw
    (and every interval built on them) is the same for the same seed.
    """

    def __init__(self, weights: Sequence[int]) -> None:
        steps = []
        remaining_weight = sum(weights)
        if len(weights) > 1 and remaining_weight <= 0:
            raise ValueError(f"weights must have a positive sum, got {list(weights)}")
        for weight in weights[:-1]:
            # No weight left means an earlier class held probability 1 and took every draw.
            probability = weight / remaining_weight if remaining_weight else 0.0
            complemented = probability > 0.5
            gap_probability = 1.0 - probability if complemented else probability
            log_q = math.log1p(-gap_probability) if 0.0 < probability < 1.0 else 0.0
            steps.append(_ConditionalStep(probability, gap_probability, complemented, log_q))
            remaining_weight -= weight
        self._steps = tuple(steps)

    def draw(self, rng: random.Random, total: int) -> tuple[int, ...]:
        return next(self.draws(rng, total))

    def draws(self, rng: random.Random, total: int) -> Iterator[tuple[int, ...]]:
        """Endless draws of ``total``: a generator, so a bootstrap pays no call per resample."""
        uniform = rng.random
        steps = self._steps
        while True:
            counts = []
            remaining = total
            for probability, gap_probability, complemented, log_q in steps:
                if not remaining:
                    drawn = 0
                elif log_q and remaining * gap_probability < _GAP_METHOD_BELOW_MEAN:
                    # binomial_variate's geometric-gap path, draw for draw.
                    successes = _gap_successes(uniform, remaining, log_q)
                    drawn = remaining - successes if complemented else successes
                else:
                    drawn = binomial_variate(rng, remaining, probability)
                counts.append(drawn)
                remaining -= drawn
            counts.append(remaining)
            yield tuple(counts)


class RatioUnit(NamedTuple):
    """One statistical unit (a case or a cluster): summed numerator and denominator per run.

    A tuple rather than a record: a comparison builds one per unit and metric.
    """

    after_numerator: float
    after_denominator: float
    before_numerator: float = 0.0
    before_denominator: float = 0.0


class RatioBootstrap(Record):
    """A cluster bootstrap of ``after`` minus ``before`` for a ratio of sums."""

    model_config = BUILT_ON_FIRST_USE

    difference: float
    low: float
    high: float
    resamples_used: int
    """Resamples whose denominators were non-zero on both sides; the rest are undefined."""


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else numerator / denominator


def ratio_bootstrap(
    units: Sequence[RatioUnit],
    *,
    paired: bool = True,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> RatioBootstrap | None:
    """Percentile interval of ``sum(after_num)/sum(after_den) - sum(before_num)/sum(before_den)``.

    Units are resampled with replacement, each keeping its before and after
    together, so a unit (a clustered scenario, a case with its trials) counts
    once however many cases or trials it holds. With ``paired=False`` the
    statistic is the after ratio alone (a one-sample interval). ``None`` when
    the observed statistic is undefined (a zero denominator).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    check_confidence(confidence)
    classes = Counter(units)
    keys = tuple(sorted(classes))
    weights = tuple(classes[key] for key in keys)
    if all(map(math.isfinite, chain.from_iterable(keys))):
        # Equal units of different types (1 and 1.0) or signs (0.0 and -0.0) may
        # compute differently, so the classes' exact spelling is part of the key.
        return _remembered_class_bootstrap(
            repr((keys, weights)),
            keys,
            weights,
            paired=paired,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
    return _class_bootstrap(
        keys, weights, paired=paired, resamples=resamples, seed=seed, confidence=confidence
    )


def _class_bootstrap(
    keys: tuple[RatioUnit, ...],
    weights: tuple[int, ...],
    *,
    paired: bool,
    resamples: int,
    seed: int,
    confidence: float,
) -> RatioBootstrap | None:
    """:func:`ratio_bootstrap` of the distinct units ``keys`` (sorted), held ``weights`` times."""

    def statistic(an: float, ad: float, bn: float, bd: float) -> float | None:
        after = _ratio(an, ad)
        if not paired:
            return after
        before = _ratio(bn, bd)
        return None if after is None or before is None else after - before

    observed = statistic(
        *(math.fsum(w * key[i] for key, w in zip(keys, weights, strict=True)) for i in range(4))
    )
    if observed is None:
        return None
    rng = random.Random(seed)
    total = sum(weights)
    # A resample's statistic depends only on its class counts, and a few
    # classes over a few units allow few distinct counts: each is worked out once.
    known: dict[tuple[int, ...], tuple[float, ...]] = {}
    values: list[float] = []
    for counts in islice(_Multinomial(weights).draws(rng, total), resamples):
        value = known.get(counts)
        if value is None:
            sums = [0.0, 0.0, 0.0, 0.0]
            for key, count in zip(keys, counts, strict=True):
                if count:
                    for i in range(4):
                        sums[i] += count * key[i]
            defined = statistic(*sums)
            value = known[counts] = () if defined is None else (defined,)
        values += value
    if not values:
        return None
    values.sort()
    tail = (1.0 - confidence) / 2.0
    return RatioBootstrap(
        difference=observed,
        low=_percentile(values, tail),
        high=_percentile(values, 1.0 - tail),
        resamples_used=len(values),
    )


@functools.lru_cache(maxsize=256)
def _remembered_class_bootstrap(
    spelling: str,
    keys: tuple[RatioUnit, ...],
    weights: tuple[int, ...],
    *,
    paired: bool,
    resamples: int,
    seed: int,
    confidence: float,
) -> RatioBootstrap | None:
    """:func:`_class_bootstrap`, remembered: a run's summary, its comparison and its
    reports ask for the same interval of the same units and seed more than once, and
    the result is an immutable record."""
    return _class_bootstrap(
        keys, weights, paired=paired, resamples=resamples, seed=seed, confidence=confidence
    )


def seed_for(*parts: str, base: int = 0) -> int:
    """A stable per-row seed, so a row's interval does not depend on which other rows exist."""
    digest = hashlib.sha256("\x1f".join((str(base), *parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sign_test(before_better: int, after_better: int) -> float:
    """Exact McNemar on units: for units of one case and one trial it is McNemar's test."""
    return mcnemar_exact(before_better, after_better)
