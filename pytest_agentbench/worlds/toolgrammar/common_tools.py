"""The three verbs every world binds the same way: query_metrics, calculator, today."""

from __future__ import annotations

import ast
import operator
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from pytest_agentbench.worlds.toolgrammar.database import day
from pytest_agentbench.worlds.toolgrammar.domain import MetricDef
from pytest_agentbench.worlds.toolgrammar.grammar import (
    BoundTool,
    Envelope,
    Param,
    Verb,
    closed_schema,
    fail,
    integer,
    ok,
    text,
)

MAX_EXPRESSION = 200
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def evaluate_expression(expression: str) -> int | float:
    """Arithmetic on numbers only: + - * / // % and parentheses; nothing else parses."""
    if len(expression) > MAX_EXPRESSION:
        raise ValueError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise ValueError("not an arithmetic expression") from None

    def walk(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)  # True is no number to a calculator
        ):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = walk(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
                raise ValueError("division by zero")
            result: int | float = _BINARY[type(node.op)](left, right)
            return result
        raise ValueError("only numbers, + - * / // % and parentheses are allowed")

    result = walk(tree)
    if isinstance(result, float) and result.is_integer():
        return int(result)
    return round(result, 6) if isinstance(result, float) else result


def _calculator(arguments: dict[str, Any]) -> Envelope:
    try:
        return ok(
            {
                "expression": arguments["expression"],
                "result": evaluate_expression(arguments["expression"]),
            }
        )
    except ValueError as exc:
        return fail("invalid_expression", str(exc))


def _today(arguments: dict[str, Any]) -> Envelope:
    offset = arguments.get("offset_days", 0)
    return ok({"date": day(offset), "offset_days": offset})


def _query_metrics(
    conn: sqlite3.Connection, metrics: Sequence[MetricDef], arguments: dict[str, Any]
) -> Envelope:
    by_name = {metric.name: metric for metric in metrics}
    metric = by_name.get(arguments["metric"])
    if metric is None:
        return fail("unknown_metric", f"no metric {arguments['metric']!r}")
    group_by = arguments.get("group_by")
    filters: dict[str, str] = arguments.get("filters", {})
    for name in [*([group_by] if group_by else []), *filters]:
        if name not in metric.dimensions:
            return fail(
                "unsupported_dimension",
                f"metric {metric.name!r} cannot be grouped or filtered by {name!r}",
            )
    where = " AND ".join(f"{metric.dimensions[name]} = ?" for name in sorted(filters))
    clause = f" WHERE {where}" if where else ""
    values = [filters[name] for name in sorted(filters)]
    if group_by is None:
        row = conn.execute(f"SELECT {metric.value} FROM {metric.source}{clause}", values).fetchone()
        return ok({"metric": metric.name, "filters": filters, "value": row[0] or 0})
    dimension = metric.dimensions[group_by]
    rows = conn.execute(
        f"SELECT {dimension} AS grp, {metric.value} FROM {metric.source}{clause} "
        f"GROUP BY grp ORDER BY grp",
        values,
    ).fetchall()
    groups = [{"group": row[0], "value": row[1] or 0} for row in rows]
    return ok({"metric": metric.name, "group_by": group_by, "filters": filters, "groups": groups})


def common_tools(conn: sqlite3.Connection, metrics: Sequence[MetricDef]) -> list[BoundTool]:
    dimensions = sorted({name for metric in metrics for name in metric.dimensions})
    filters = Param(
        "filters",
        "object",
        "equality filters by dimension",
        extra={
            "properties": {
                name: {"type": "string", "description": f"{name} equals"} for name in dimensions
            },
            "additionalProperties": False,
        },
    )
    return [
        BoundTool(
            Verb.QUERY_METRICS,
            "query_metrics",
            "Aggregate one metric over the world, optionally grouped and filtered.",
            closed_schema(
                text(
                    "metric", "metric name", required=True, enum=[metric.name for metric in metrics]
                ),
                text("group_by", "dimension to group by", enum=dimensions),
                filters,
            ),
            lambda arguments: _query_metrics(conn, metrics, arguments),
        ),
        BoundTool(
            Verb.CALCULATOR,
            "calculator",
            "Evaluate an arithmetic expression (+ - * / // % and parentheses).",
            closed_schema(
                text("expression", "the expression", required=True, maxLength=MAX_EXPRESSION)
            ),
            _calculator,
        ),
        BoundTool(
            Verb.TODAY,
            "today",
            "The world's current date (2026-01-01), optionally shifted by whole days.",
            closed_schema(integer("offset_days", "days to add", minimum=-3650, maximum=3650)),
            _today,
        ),
    ]
