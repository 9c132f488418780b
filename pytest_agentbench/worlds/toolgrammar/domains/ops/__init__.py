"""ops: customers, orders, tickets and refunds; the privileged write moves money."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.domain import Domain, MetricDef, Nouns, Phrasing
from pytest_agentbench.worlds.toolgrammar.domains.ops import build, tools
from pytest_agentbench.worlds.toolgrammar.domains.ops.policy import REFUSAL_REASONS, refund_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import BoundTool

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

_ORDERS = "orders o JOIN customers c ON c.customer_id = o.customer_id"
_ORDER_DIMS = {
    "region": "c.region",
    "tier": "c.tier",
    "status": "o.status",
    "month": "SUBSTR(o.placed_date, 1, 7)",
}
_REFUNDS = "refunds r JOIN customers c ON c.customer_id = r.customer_id"
_REFUND_DIMS = {"region": "c.region", "tier": "c.tier", "month": "SUBSTR(r.issued_date, 1, 7)"}


class OpsDomain(Domain):
    name = "ops"
    seed = 20260101
    writable_tables = ("refunds", "tickets")
    nouns = Nouns(
        principal="customer",
        principals="customers",
        principal_table="customers",
        principal_id="customer_id",
        principal_name="name",
        group="region",
        record="order",
        records="orders",
        record_table="orders",
        record_id="order_id",
        record_owner="customer_id",
        record_statuses=("pending", "shipped", "delivered", "returned", "cancelled"),
        principal_count_metric="customer_count",
        id_prefix_record="ORD",
        case="ticket",
        done_status="delivered",
        case_table="tickets",
        case_id="ticket_id",
        write_phrase="refund",
        write_table="refunds",
        write_id="refund_id",
        writable_statuses=("delivered", "returned"),
        not_writable_code="order_not_eligible",
    )
    phrasing = Phrasing(
        policy_fact="What is the refund window in days for the {tier} tier?",
        policy_choices={"tier": w.TIERS},
        policy_field="window_days",
        write="Please issue a refund of {amount_cents} cents on order {order_id}.",
    )
    refusal_reasons = REFUSAL_REASONS
    metrics = (
        MetricDef("order_count", _ORDERS, "COUNT(*)", _ORDER_DIMS),
        MetricDef("revenue_cents", _ORDERS, "SUM(o.total_cents)", _ORDER_DIMS),
        MetricDef("avg_order_value_cents", _ORDERS, "SUM(o.total_cents) / COUNT(*)", _ORDER_DIMS),
        MetricDef("shipping_cents", _ORDERS, "SUM(o.shipping_cents)", _ORDER_DIMS),
        MetricDef("refund_total_cents", _REFUNDS, "SUM(r.amount_cents)", _REFUND_DIMS),
        MetricDef("refund_count", _REFUNDS, "COUNT(*)", _REFUND_DIMS),
        MetricDef(
            "ticket_count",
            "tickets t JOIN customers c ON c.customer_id = t.customer_id",
            "COUNT(*)",
            {
                "region": "c.region",
                "tier": "c.tier",
                "status": "t.status",
                "month": "SUBSTR(t.created_date, 1, 7)",
            },
        ),
        MetricDef(
            "customer_count",
            "customers c",
            "COUNT(*)",
            {"region": "c.region", "tier": "c.tier", "month": "SUBSTR(c.signup_date, 1, 7)"},
        ),
    )

    def schema(self) -> str:
        return build.SCHEMA

    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        build.populate(conn, rng)

    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        return tools.tools(sandbox)

    def privileged_verdict(self, conn: sqlite3.Connection, arguments: Mapping[str, Any]) -> str:
        return refund_verdict(conn, arguments["order_id"], arguments["amount_cents"])


DOMAIN = OpsDomain()
