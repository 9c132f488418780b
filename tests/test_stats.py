from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.scoring.stats import (
    BootstrapResult,
    HolmResult,
    RatioUnit,
    _remembered_class_bootstrap,
    binomial_variate,
    cohens_kappa,
    holm_bonferroni,
    mcnemar_exact,
    multinomial_counts,
    paired_bootstrap,
    ratio_bootstrap,
    seed_for,
)
from pytest_agentbench.sdk.intervals import normal_quantile, wilson_interval

# --- normal quantile ---------------------------------------------------------


@pytest.mark.parametrize(
    ("probability", "expected"),
    [
        (0.975, 1.959963984540054),
        (0.995, 2.5758293035489004),
        (0.95, 1.6448536269514722),
        (0.5, 0.0),
        (0.025, -1.959963984540054),
    ],
)
def test_normal_quantile_matches_reference_values(probability: float, expected: float) -> None:
    assert normal_quantile(probability) == pytest.approx(expected, abs=1e-12)


@given(st.floats(min_value=1e-12, max_value=1 - 1e-12))
def test_normal_quantile_inverts_the_cdf(probability: float) -> None:
    z = normal_quantile(probability)
    assert 0.5 * math.erfc(-z / math.sqrt(2.0)) == pytest.approx(probability, rel=1e-9)


@pytest.mark.parametrize("probability", [0.0, 1.0, -0.1, 1.5])
def test_normal_quantile_refuses_probabilities_outside_the_open_unit_interval(
    probability: float,
) -> None:
    with pytest.raises(ValueError, match="probability"):
        normal_quantile(probability)


# --- Wilson interval ---------------------------------------------------------


def test_wilson_textbook_value() -> None:
    interval = wilson_interval(8, 10)
    assert interval is not None
    assert interval == pytest.approx((0.4902, 0.9433), abs=5e-5)


@st.composite
def _binomial_counts(draw: st.DrawFn) -> tuple[int, int]:
    trials = draw(st.integers(min_value=1, max_value=10_000))
    return draw(st.integers(min_value=0, max_value=trials)), trials


@given(_binomial_counts())
def test_wilson_bounds_solve_the_score_test_equation(counts: tuple[int, int]) -> None:
    # Wilson's bounds are the proportions p0 at which the score statistic
    # (p_hat - p0) / sqrt(p0 (1 - p0) / n) equals -z or +z.
    successes, trials = counts
    interval = wilson_interval(successes, trials)
    assert interval is not None
    observed = successes / trials
    z = 1.959963984540054
    for bound in interval:
        if 0.0 < bound < 1.0:
            assert (observed - bound) ** 2 == pytest.approx(
                z * z * bound * (1.0 - bound) / trials, rel=1e-7, abs=1e-15
            )


def test_wilson_wider_at_higher_confidence() -> None:
    narrow = wilson_interval(8, 10, confidence=0.90)
    wide = wilson_interval(8, 10, confidence=0.99)
    assert narrow is not None
    assert wide is not None
    assert wide[0] < narrow[0]
    assert wide[1] > narrow[1]


def test_wilson_is_none_without_trials() -> None:
    assert wilson_interval(0, 0) is None


def test_wilson_bounds_are_exact_at_the_extremes() -> None:
    none_passed = wilson_interval(0, 10)
    all_passed = wilson_interval(10, 10)
    assert none_passed is not None
    assert all_passed is not None
    assert none_passed[0] == 0.0
    assert all_passed[1] == 1.0
    assert none_passed[1] == pytest.approx(1 - all_passed[0], abs=1e-12)


@pytest.mark.parametrize(
    ("successes", "trials", "confidence"),
    [(-1, 10, 0.95), (11, 10, 0.95), (0, -1, 0.95), (5, 10, 0.0), (5, 10, 1.0)],
)
def test_wilson_refuses_invalid_arguments(successes: int, trials: int, confidence: float) -> None:
    with pytest.raises(ValueError, match=r"successes|confidence"):
        wilson_interval(successes, trials, confidence)


@given(_binomial_counts(), st.floats(min_value=0.5, max_value=0.999))
def test_wilson_contains_point_estimate_within_unit_interval(
    counts: tuple[int, int], confidence: float
) -> None:
    successes, trials = counts
    interval = wilson_interval(successes, trials, confidence)
    assert interval is not None
    low, high = interval
    assert 0.0 <= low <= successes / trials <= high <= 1.0


# --- paired bootstrap --------------------------------------------------------

_FIRST = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0] * 5
_SECOND = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0] * 5


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    first = paired_bootstrap(_FIRST, _SECOND, resamples=2_000, seed=7)
    second = paired_bootstrap(_FIRST, _SECOND, resamples=2_000, seed=7)
    assert first == second


def test_bootstrap_interval_depends_on_seed_but_mean_does_not() -> None:
    # Continuous scores, so percentiles of different draws cannot coincide by chance.
    a = [(unit * 7919 % 101) / 10 for unit in range(30)]
    b = [(unit * 104729 % 97) / 10 for unit in range(30)]
    one = paired_bootstrap(a, b, resamples=2_000, seed=1)
    other = paired_bootstrap(a, b, resamples=2_000, seed=2)
    assert one.mean_difference == other.mean_difference
    assert one.mean_difference == pytest.approx((sum(a) - sum(b)) / 30)
    assert (one.low, one.high) != (other.low, other.high)


def test_bootstrap_interval_brackets_the_mean_difference() -> None:
    result = paired_bootstrap(_FIRST, _SECOND, resamples=2_000)
    assert isinstance(result, BootstrapResult)
    assert 0.0 < result.low < result.mean_difference < result.high < 1.0


def test_bootstrap_keeps_pairs_together() -> None:
    # Each unit differs by exactly 0.5 although the raw scores vary widely, so
    # any resampling that respects pairing sees the same mean in every draw.
    a = [0.5, 3.0, 10.5, 1.0]
    b = [0.0, 2.5, 10.0, 0.5]
    result = paired_bootstrap(a, b, resamples=500)
    assert result == BootstrapResult(mean_difference=0.5, low=0.5, high=0.5)


def test_bootstrap_percentiles_on_two_units() -> None:
    # Resample means over differences (1, 0) are 0, 0.5 or 1 with probabilities
    # 1/4, 1/2, 1/4, so the 2.5% and 97.5% percentiles sit on the extremes.
    result = paired_bootstrap([1.0, 0.0], [0.0, 0.0], resamples=4_000, seed=3)
    assert (result.mean_difference, result.low, result.high) == (0.5, 0.0, 1.0)


def test_bootstrap_percentiles_interpolate_between_resample_means() -> None:
    # With two resamples, an almost-full interval spans the two resample means
    # and the 50% interval is their quartiles by linear interpolation.
    a = [(unit * 7919 % 101) / 10 for unit in range(30)]
    b = [0.0] * 30
    extremes = paired_bootstrap(a, b, resamples=2, confidence=1 - 1e-12)
    quartiles = paired_bootstrap(a, b, resamples=2, confidence=0.5)
    spread = extremes.high - extremes.low
    assert spread > 0.0
    assert quartiles.low == pytest.approx(extremes.low + spread / 4, rel=1e-9)
    assert quartiles.high == pytest.approx(extremes.low + 3 * spread / 4, rel=1e-9)


def test_bootstrap_narrows_at_lower_confidence() -> None:
    wide = paired_bootstrap(_FIRST, _SECOND, resamples=2_000, confidence=0.99)
    narrow = paired_bootstrap(_FIRST, _SECOND, resamples=2_000, confidence=0.5)
    assert wide.low < narrow.low
    assert narrow.high < wide.high


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1.0, 2.0], [1.0], {}, "length"),
        ([], [], {}, "empty"),
        ([1.0], [0.0], {"resamples": 0}, "resamples"),
        ([1.0], [0.0], {"confidence": 1.0}, "confidence"),
        ([math.nan], [0.0], {}, "non-finite"),
    ],
)
def test_bootstrap_refuses_invalid_input(
    a: list[float], b: list[float], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(a, b, **kwargs)


# --- McNemar exact -----------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (1, 6, 0.125),
        (6, 1, 0.125),
        (0, 5, 0.0625),
        (2, 10, 0.03857421875),
        (3, 3, 1.0),
        (0, 0, 1.0),
        (4, 5, 1.0),
    ],
)
def test_mcnemar_exact_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == expected


def test_mcnemar_stays_exact_for_large_counts() -> None:
    # 2 ** 2000 overflows a float; the exact computation must not.
    assert mcnemar_exact(1000, 1000) == 1.0
    assert 0.0 < mcnemar_exact(900, 1100) < 1e-5


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=0, max_value=300))
def test_mcnemar_is_symmetric_probability(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert p == mcnemar_exact(c, b)
    assert 0.0 < p <= 1.0


# --- Holm-Bonferroni ---------------------------------------------------------


def test_holm_small_family() -> None:
    results = holm_bonferroni({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert list(results) == ["a", "b", "c", "d"]
    adjusted = {name: result.adjusted_p for name, result in results.items()}
    assert adjusted == pytest.approx({"d": 0.02, "a": 0.03, "c": 0.06, "b": 0.06})
    rejected = {name for name, result in results.items() if result.rejected}
    assert rejected == {"a", "d"}
    assert results["d"] == HolmResult(p_value=0.005, adjusted_p=0.02, rejected=True)


def test_holm_stops_at_first_acceptance() -> None:
    # 0.04 alone would pass alpha / 1, but Holm stops at the first hypothesis it keeps.
    results = holm_bonferroni({"x": 0.03, "y": 0.04})
    assert not results["x"].rejected
    assert not results["y"].rejected


def test_holm_caps_adjusted_p_at_one() -> None:
    results = holm_bonferroni({"x": 0.6, "y": 0.7, "z": 0.9})
    assert [results[name].adjusted_p for name in "xyz"] == [1.0, 1.0, 1.0]


def test_holm_empty_family() -> None:
    assert holm_bonferroni({}) == {}


@pytest.mark.parametrize(
    ("p_values", "alpha", "message"),
    [({"x": 1.5}, 0.05, "'x'"), ({"x": -0.1}, 0.05, "'x'"), ({"x": 0.1}, 0.0, "alpha")],
)
def test_holm_refuses_invalid_input(p_values: dict[str, float], alpha: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        holm_bonferroni(p_values, alpha)


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=4), st.floats(min_value=0.0, max_value=1.0), max_size=12
    ),
    st.floats(min_value=0.001, max_value=0.2),
)
def test_holm_properties(p_values: dict[str, float], alpha: float) -> None:
    results = holm_bonferroni(p_values, alpha)
    assert set(results) == set(p_values)
    ordered = sorted(results.values(), key=lambda result: (result.p_value, result.adjusted_p))
    for result in ordered:
        assert result.p_value <= result.adjusted_p <= 1.0
        assert result.rejected == (result.adjusted_p <= alpha)
    adjusted = [result.adjusted_p for result in ordered]
    assert adjusted == sorted(adjusted)
    verdicts = [result.rejected for result in ordered]
    assert verdicts == sorted(verdicts, reverse=True)


# --- Cohen's kappa -----------------------------------------------------------


@pytest.mark.parametrize(
    ("confusion", "expected"),
    [
        ([[20, 5], [10, 15]], 0.4),
        ([[10, 2, 0], [1, 8, 1], [0, 1, 7]], 74 / 99),
        ([[3, 0], [0, 4]], 1.0),
        ([[0, 5], [5, 0]], -1.0),
        ([[25, 25], [25, 25]], 0.0),
    ],
)
def test_kappa_known_values(confusion: list[list[int]], expected: float) -> None:
    assert cohens_kappa(confusion) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("confusion", [[], [[0, 0], [0, 0]], [[5, 0], [0, 0]], [[7]]])
def test_kappa_undefined(confusion: list[list[int]]) -> None:
    assert cohens_kappa(confusion) is None


@pytest.mark.parametrize(
    ("confusion", "message"),
    [
        ([[1, 2], [3]], "not square"),
        ([[1, 2, 3], [4, 5, 6]], "not square"),
        ([[1, -1], [0, 2]], "negative"),
    ],
)
def test_kappa_refuses_malformed_matrix(confusion: list[list[int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cohens_kappa(confusion)


@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda size: st.lists(
            st.lists(st.integers(min_value=0, max_value=50), min_size=size, max_size=size),
            min_size=size,
            max_size=size,
        )
    )
)
def test_kappa_is_symmetric_and_bounded(confusion: list[list[int]]) -> None:
    kappa = cohens_kappa(confusion)
    transposed = [list(column) for column in zip(*confusion, strict=True)]
    assert kappa == cohens_kappa(transposed)
    if kappa is not None:
        assert -1.0 <= kappa <= 1.0


# --- binomial and multinomial draws -------------------------------------------


@pytest.mark.parametrize(("trials", "probability"), [(40, 0.3), (400, 0.3), (12, 0.8)])
def test_binomial_variate_follows_the_binomial_law(trials: int, probability: float) -> None:
    rng = random.Random(7)
    draws = 50_000
    counts = Counter(binomial_variate(rng, trials, probability) for _ in range(draws))
    chi_square, cells = 0.0, 0
    for k in range(trials + 1):
        expected = draws * math.comb(trials, k) * probability**k * (1 - probability) ** (trials - k)
        if expected > 5:
            chi_square += (counts[k] - expected) ** 2 / expected
            cells += 1
    # Far beyond the 99.9% point of chi-square with this many cells: a biased sampler fails.
    assert chi_square < 3 * cells


def test_binomial_variate_edges() -> None:
    rng = random.Random(0)
    assert binomial_variate(rng, 0, 0.5) == 0
    assert binomial_variate(rng, 9, 0.0) == 0
    assert binomial_variate(rng, 9, 1.0) == 9
    with pytest.raises(ValueError, match="non-negative"):
        binomial_variate(rng, -1, 0.5)


def test_multinomial_counts_add_up_and_follow_the_weights() -> None:
    rng = random.Random(3)
    totals = [0, 0, 0]
    for _ in range(2_000):
        counts = multinomial_counts(rng, 100, [1, 3, 6])
        assert sum(counts) == 100
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
    assert [t / 200_000 for t in totals] == pytest.approx([0.1, 0.3, 0.6], abs=0.005)


# --- cluster bootstrap of ratios ----------------------------------------------


def _units(pairs: list[tuple[int, int]]) -> list[RatioUnit]:
    return [RatioUnit(after, 1, before, 1) for after, before in pairs]


def test_ratio_bootstrap_of_identical_runs_is_exactly_zero() -> None:
    result = ratio_bootstrap(_units([(1, 1)] * 7 + [(0, 0)] * 3), seed=5)
    assert result is not None
    assert (result.difference, result.low, result.high) == (0.0, 0.0, 0.0)


def test_ratio_bootstrap_is_deterministic_under_a_seed_and_moves_with_it() -> None:
    units = _units([(1, 1)] * 20 + [(0, 1)] * 8 + [(1, 0)] * 2 + [(0, 0)] * 10)
    first = ratio_bootstrap(units, seed=11)
    assert first == ratio_bootstrap(units, seed=11)
    assert first == ratio_bootstrap(list(reversed(units)), seed=11)
    assert first != ratio_bootstrap(units, seed=12)
    assert first is not None
    # Hand-checked: 22/40 passed after, 28/40 before.
    assert first.difference == pytest.approx(22 / 40 - 28 / 40)
    assert first.low < first.difference < first.high


def test_ratio_bootstrap_interval_matches_the_normal_approximation_at_scale() -> None:
    # 400 units, 60 only-before and 20 only-after: the difference is -0.1 with
    # standard error sqrt((60 + 20) / 400**2 - 0.1**2 / 400) = 0.02.
    units = _units([(0, 1)] * 60 + [(1, 0)] * 20 + [(1, 1)] * 200 + [(0, 0)] * 120)
    result = ratio_bootstrap(units, seed=1)
    assert result is not None
    assert result.difference == pytest.approx(-0.1)
    assert result.low == pytest.approx(-0.1 - 1.96 * 0.02, abs=0.004)
    assert result.high == pytest.approx(-0.1 + 1.96 * 0.02, abs=0.004)


def test_ratio_bootstrap_is_a_ratio_of_sums_over_clusters() -> None:
    # Two clusters of unequal size: the statistic weights cases, the resampling clusters.
    units = [RatioUnit(3, 4, 1, 4), RatioUnit(1, 1, 1, 1)]
    result = ratio_bootstrap(units, seed=0)
    assert result is not None
    assert result.difference == pytest.approx(4 / 5 - 2 / 5)
    one_sample = ratio_bootstrap(units, paired=False, seed=0)
    assert one_sample is not None
    assert one_sample.difference == pytest.approx(4 / 5)
    assert (one_sample.low, one_sample.high) == pytest.approx((0.75, 1.0))


def test_ratio_bootstrap_of_an_undefined_ratio_is_none() -> None:
    assert ratio_bootstrap([RatioUnit(0, 0, 1, 1)]) is None


def test_seed_for_is_stable_and_distinct() -> None:
    assert seed_for("suite", "accuracy") == seed_for("suite", "accuracy")
    assert seed_for("suite", "accuracy") != seed_for("suite", "zero_rate")
    assert seed_for("suite", "accuracy", base=1) != seed_for("suite", "accuracy")


# --- the fast sampler against the plain definition -----------------------------
#
# ratio_bootstrap draws its multinomials with precomputed conditional
# probabilities, the small-mean binomial path inline, and each distinct
# resample's statistic computed once. The reference below is the plain
# definition it replaced; both must consume the generator identically, so every
# interval stays the same for the same seed.


def _reference_multinomial(rng: random.Random, total: int, weights: list[int]) -> list[int]:
    counts = []
    remaining_draws, remaining_weight = total, sum(weights)
    for weight in weights[:-1]:
        drawn = (
            binomial_variate(rng, remaining_draws, weight / remaining_weight)
            if remaining_draws
            else 0
        )
        counts.append(drawn)
        remaining_draws -= drawn
        remaining_weight -= weight
    counts.append(remaining_draws)
    return counts


def _reference_ratio_bootstrap(
    units: list[RatioUnit], *, paired: bool, resamples: int, seed: int
) -> tuple[float, float, float, int] | None:
    def statistic(sums: list[float]) -> float | None:
        an, ad, bn, bd = sums
        after = None if ad == 0 else an / ad
        if not paired:
            return after
        before = None if bd == 0 else bn / bd
        return None if after is None or before is None else after - before

    classes = Counter(units)
    keys = sorted(classes)
    weights = [classes[key] for key in keys]
    observed = statistic(
        [math.fsum(w * key[i] for key, w in zip(keys, weights, strict=True)) for i in range(4)]
    )
    if observed is None:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        counts = _reference_multinomial(rng, len(units), weights)
        sums = [0.0, 0.0, 0.0, 0.0]
        for key, count in zip(keys, counts, strict=True):
            if count:
                for i in range(4):
                    sums[i] += count * key[i]
        value = statistic(sums)
        if value is not None:
            values.append(value)
    if not values:
        return None
    values.sort()

    def percentile(fraction: float) -> float:
        position = fraction * (len(values) - 1)
        lower = math.floor(position)
        upper = min(lower + 1, len(values) - 1)
        return values[lower] + (values[upper] - values[lower]) * (position - lower)

    tail = (1.0 - 0.95) / 2.0
    return observed, percentile(tail), percentile(1.0 - tail), len(values)


def test_multinomial_counts_draw_exactly_what_the_plain_definition_draws() -> None:
    # Small and large means (the inline gap path and BTRS), probabilities above
    # one half (the complemented path), a zero weight and a single class.
    cases = [
        (5, [1, 1]),
        (40, [1, 3, 6]),
        (400, [1, 3, 6]),
        (30, [9, 1]),
        (12, [0, 2, 1]),
        (7, [3]),
        (0, [2, 5]),
        (1_000, [1, 998, 1]),
    ]
    for seed in range(40):
        for total, weights in cases:
            fast, plain = random.Random(seed), random.Random(seed)
            for _ in range(20):
                assert multinomial_counts(fast, total, weights) == _reference_multinomial(
                    plain, total, weights
                )
            assert fast.random() == plain.random()


def test_multinomial_counts_refuse_weights_without_mass() -> None:
    with pytest.raises(ValueError, match="positive sum"):
        multinomial_counts(random.Random(0), 3, [0, 0])


def test_ratio_bootstrap_matches_the_plain_definition_on_many_seeded_inputs() -> None:
    shapes = random.Random(2026)
    for index in range(80):
        size = shapes.randint(1, 45)
        denominators = shapes.choice([(1,), (1, 3), (0, 1, 2), (4,)])
        fractional = index % 3 == 0
        units = []
        for _ in range(size):
            ad, bd = shapes.choice(denominators), shapes.choice(denominators)
            an, bn = shapes.randint(0, ad), shapes.randint(0, bd)
            if fractional:
                units.append(RatioUnit(an / 3, ad, bn * 0.1, bd))
            else:
                units.append(RatioUnit(an, ad, bn, bd))
        paired = index % 4 != 1
        resamples = 2_000 if index == 0 else 200
        fast = ratio_bootstrap(units, paired=paired, resamples=resamples, seed=index)
        plain = _reference_ratio_bootstrap(units, paired=paired, resamples=resamples, seed=index)
        assert plain == (
            None if fast is None else (fast.difference, fast.low, fast.high, fast.resamples_used)
        )


def test_ratio_bootstrap_remembers_intervals_by_the_exact_spelling_of_the_units() -> None:
    ints = [RatioUnit(1, 1, 0, 1)] * 3 + [RatioUnit(0, 1, 0, 1)]
    floats = [RatioUnit(*map(float, unit)) for unit in ints]
    _remembered_class_bootstrap.cache_clear()
    first = ratio_bootstrap(ints, seed=9, resamples=500)
    # The same units in another order are the same classes: the interval is remembered.
    assert ratio_bootstrap(list(reversed(ints)), seed=9, resamples=500) is first
    # Equal units spelt otherwise are worked out on their own (and agree here).
    assert ratio_bootstrap(floats, seed=9, resamples=500) == first
    assert _remembered_class_bootstrap.cache_info().misses == 2
    # Non-finite units are never remembered.
    ratio_bootstrap([RatioUnit(math.inf, 1, 0, 1)], seed=9, resamples=500)
    assert _remembered_class_bootstrap.cache_info().misses == 2
