"""Model matrices: the running model of a case, item names, and what the models say per suite.

Under a matrix of models (``--agentbench-model`` repeated, ``--agentbench-models``)
every case is collected once per model as ``case[model=NAME]`` (before any
``[trial-K]``). While the case runs, :func:`current_model` names its model, so
the chat agent (or a user's adapter) answers with that model's settings.

Per suite, each model gets its own counts and metrics (computed exactly as the
suite's own, over that model's results only), and every pair of models a paired
comparison on the cases both graded: the four pass/fail cells, the pass rates,
their difference, and the exact McNemar p-value (the sign test the baseline
comparison uses), Holm-adjusted over the suite's pairs. A case's trials pair
trial by trial; a pair's unit is the case (clusters are not pooled here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from contextvars import ContextVar, Token
from decimal import Decimal
from itertools import combinations

from pytest_agentbench.sdk.contracts import (
    BUILT_ON_FIRST_USE,
    CaseOutcome,
    CaseResult,
    MetricSpec,
    MetricValue,
    Record,
)
from pytest_agentbench.sdk.metrics import aggregate, graded, select

_CURRENT: ContextVar[str | None] = ContextVar("agentbench_model", default=None)


def current_model() -> str | None:
    """The matrix model the running case is for; ``None`` outside a matrix."""
    return _CURRENT.get()


def enter_model(name: str | None) -> Token[str | None]:
    return _CURRENT.set(name)


def leave_model(token: Token[str | None]) -> None:
    _CURRENT.reset(token)


MODEL_PREFIX = "[model="


def model_item_name(name: str, model: str | None) -> str:
    """``case`` -> ``case[model=NAME]``; the trial suffix, if any, goes after it."""
    if model is None:
        return name
    head, sep, tail = name.partition("[trial-")
    return f"{head}{MODEL_PREFIX}{model}]{sep}{tail}"


def split_model(name: str) -> tuple[str, str | None]:
    """``case[model=a][trial-2]`` -> (``case[trial-2]``, ``a``); no model -> (name, None)."""
    head, sep, tail = name.rpartition(MODEL_PREFIX)
    end = tail.find("]")
    if not sep or end < 1:
        return name, None
    return head + tail[end + 1 :], tail[:end]


# --- what the models say ------------------------------------------------------


class ModelRow(Record):
    """One model's figures in one suite."""

    model_config = BUILT_ON_FIRST_USE

    model: str
    counts: dict[str, int]
    metrics: tuple[MetricValue, ...]
    calls: int
    input_tokens: int
    output_tokens: int
    cost: str | None
    """Summed over its cases' model traffic; ``None`` when no case was priced."""
    settings_sha256: str | None = None
    """The digest of the model's chat settings (as the run's ``model_run`` gives its own)."""


class ModelPair(Record):
    """Two models on the cases (and trials) both graded."""

    model_config = BUILT_ON_FIRST_USE

    a: str
    b: str
    pairs: int
    both_passed: int
    only_a_passed: int
    only_b_passed: int
    both_failed: int
    pass_rate_a: float | None
    pass_rate_b: float | None
    difference: float | None
    """``pass_rate_b - pass_rate_a`` on the paired cases."""
    p_value: float | None
    """Exact McNemar on the discordant pairs; ``None`` without pairs."""
    adjusted_p: float | None
    """Holm-adjusted over the suite's pairs."""


class SuiteMatrix(Record):
    """A suite's ``models`` block: a model-by-metric table and the models' pairs."""

    model_config = BUILT_ON_FIRST_USE

    suite_id: str
    rows: tuple[ModelRow, ...]
    pairs: tuple[ModelPair, ...]


def _traffic(results: Sequence[CaseResult]) -> tuple[int, int, int, str | None]:
    """Calls, input and output tokens, and the exact cost (``None``: no case priced)."""
    calls = inputs = outputs = 0
    cost: Decimal | None = None
    for result in results:
        traffic = result.model_calls
        if not traffic:
            continue
        calls += int(str(traffic.get("calls", 0)))
        inputs += int(str(traffic.get("input_tokens", 0)))
        outputs += int(str(traffic.get("output_tokens", 0)))
        spent = traffic.get("cost")
        if isinstance(spent, str):
            cost = (cost or Decimal(0)) + Decimal(spent)
    text = None if cost is None else format(cost.normalize(), "f")
    return calls, inputs, outputs, text


def _pair(a: str, b: str, passes: dict[str, dict[tuple[str, int], bool]]) -> ModelPair:
    # The statistics are imported by a model matrix's summary alone: every benchmark
    # process imports this module (its current model), few of them run a matrix.
    from pytest_agentbench.scoring.stats import mcnemar_exact

    keys = sorted(set(passes[a]) & set(passes[b]))
    cells: Counter[tuple[bool, bool]] = Counter((passes[a][k], passes[b][k]) for k in keys)
    only_a, only_b = cells[(True, False)], cells[(False, True)]
    count = len(keys)
    rate_a = (cells[(True, True)] + only_a) / count if count else None
    rate_b = (cells[(True, True)] + only_b) / count if count else None
    return ModelPair(
        a=a,
        b=b,
        pairs=count,
        both_passed=cells[(True, True)],
        only_a_passed=only_a,
        only_b_passed=only_b,
        both_failed=cells[(False, False)],
        pass_rate_a=rate_a,
        pass_rate_b=rate_b,
        difference=None if rate_a is None or rate_b is None else rate_b - rate_a,
        p_value=mcnemar_exact(only_a, only_b) if count else None,
        adjusted_p=None,
    )


def summarise_suite(
    suite_id: str,
    models: Sequence[str],
    specs: Sequence[MetricSpec],
    selected: Sequence[str] | None,
    results: Sequence[CaseResult],
    *,
    digests: Mapping[str, str | None] | None = None,
) -> SuiteMatrix:
    """The suite's model-by-metric rows and pairwise comparisons, in the matrix's order."""
    by_model: dict[str, list[CaseResult]] = {name: [] for name in models}
    for result in results:
        if result.model in by_model:
            by_model[result.model].append(result)
    rows = []
    passes: dict[str, dict[tuple[str, int], bool]] = {}
    for name in models:
        mine = by_model[name]
        outcomes = Counter(result.outcome.value for result in mine)
        calls, inputs, outputs, cost = _traffic(mine)
        rows.append(
            ModelRow(
                model=name,
                counts={o.value: outcomes.get(o.value, 0) for o in CaseOutcome},
                metrics=tuple(select(aggregate(specs, mine), selected)),
                calls=calls,
                input_tokens=inputs,
                output_tokens=outputs,
                cost=cost,
                settings_sha256=(digests or {}).get(name),
            )
        )
        passes[name] = {
            (r.case_id, r.trial or 1): r.outcome is CaseOutcome.PASSED for r in graded(mine)
        }
    pairs = [_pair(a, b, passes) for a, b in combinations(models, 2)]
    tested = {f"{p.a}\x1f{p.b}": p.p_value for p in pairs if p.p_value is not None}
    holm = {}
    if tested:
        from pytest_agentbench.scoring.stats import holm_bonferroni

        holm = holm_bonferroni(tested)
    adjusted = []
    for pair in pairs:
        held = holm.get(f"{pair.a}\x1f{pair.b}")
        adjusted.append(
            pair.model_copy(update={"adjusted_p": None if held is None else held.adjusted_p})
        )
    return SuiteMatrix(suite_id=suite_id, rows=tuple(rows), pairs=tuple(adjusted))
