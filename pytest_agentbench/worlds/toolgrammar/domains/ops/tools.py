"""The ops world's bound verbs (§1): eight tools of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import handlers
from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import Row, day
from pytest_agentbench.worlds.toolgrammar.domains.ops.policy import refund_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import (
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    integer,
    limit_param,
    text,
)
from pytest_agentbench.worlds.toolgrammar.privileged import guarded_write
from pytest_agentbench.worlds.toolgrammar.records import DATE_PATTERN, insert, next_id, one

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

CUSTOMERS = handlers.Table("customers", "customer_id", "customer")
ORDERS = handlers.Table("orders", "order_id", "order")
TICKETS = handlers.Table("tickets", "ticket_id", "ticket")


def tools(sandbox: Sandbox) -> Sequence[BoundTool]:
    conn = sandbox.conn

    def ticket(args: dict[str, Any]) -> Row:
        return {
            "ticket_id": next_id(conn, "tickets", "TKT"),
            "customer_id": args["customer_id"],
            "order_id": args.get("order_id"),
            "subject": args["subject"],
            "body": args.get("body", ""),
            "status": "open",
            "priority": args.get("priority", "normal"),
            "assignee": "",
            "created_date": day(0),
            "updated_date": day(0),
            "resolution": "",
        }

    def issue_refund(args: dict[str, Any]) -> Envelope:
        verdict = refund_verdict(conn, args["order_id"], args["amount_cents"])

        def write() -> dict[str, Any]:
            order = one(conn, "orders", "order_id", args["order_id"])
            assert order is not None
            customer = one(conn, "customers", "customer_id", order["customer_id"])
            assert customer is not None
            policy = one(conn, "refund_policies", "tier", customer["tier"])
            assert policy is not None
            row = {
                "refund_id": next_id(conn, "refunds", "REF"),
                "order_id": args["order_id"],
                "customer_id": order["customer_id"],
                "amount_cents": args["amount_cents"],
                "reason": f"approved under {policy['policy_id']}",
                "issued_date": day(0),
                "approved_by": "policy",
            }
            insert(conn, "refunds", row)
            return row

        return guarded_write(sandbox, "issue_refund", args, verdict, write)

    return [
        BoundTool(
            Verb.SEARCH_PRINCIPALS,
            "search_customers",
            "Find customers whose name or email contains the query.",
            closed_schema(
                text("query", "text to look for", required=True),
                text("region", "only this region", enum=list(w.REGIONS)),
                text("tier", "only this tier", enum=list(w.TIERS)),
                limit_param(),
            ),
            handlers.search_by_name(
                conn,
                CUSTOMERS,
                columns="customer_id, name, email, region, tier",
                like=("name", "email"),
                filters=[("region = ?", "region"), ("tier = ?", "tier")],
            ),
        ),
        BoundTool(
            Verb.GET_PRINCIPAL,
            "get_customer",
            "One customer by id.",
            closed_schema(text("customer_id", "e.g. CUS-00001", required=True)),
            handlers.get_by_id(conn, CUSTOMERS),
        ),
        BoundTool(
            Verb.GET_RECORD,
            "get_order",
            "One order by id.",
            closed_schema(text("order_id", "e.g. ORD-00001", required=True)),
            handlers.get_by_id(conn, ORDERS),
        ),
        BoundTool(
            Verb.LIST_RECORDS,
            "list_orders",
            "A customer's orders, oldest first.",
            closed_schema(
                text("customer_id", "the customer", required=True),
                text("status", "only this status", enum=list(w.ORDER_STATUSES)),
                text("since", "placed on or after (YYYY-MM-DD)", pattern=DATE_PATTERN),
                text("until", "placed on or before (YYYY-MM-DD)", pattern=DATE_PATTERN),
                limit_param(),
            ),
            handlers.list_under(
                conn,
                CUSTOMERS,
                ORDERS,
                columns="order_id, placed_date, status, total_cents",
                filters=[
                    ("status = ?", "status"),
                    ("placed_date >= ?", "since"),
                    ("placed_date <= ?", "until"),
                ],
                order="placed_date, order_id",
            ),
        ),
        BoundTool(
            Verb.CREATE_CASE,
            "create_ticket",
            "Open a support ticket for a customer.",
            closed_schema(
                text("customer_id", "the customer", required=True),
                text("subject", "one-line subject", required=True, maxLength=200),
                text("body", "details", maxLength=2000),
                text("priority", "ticket priority", enum=list(w.PRIORITIES)),
                text("order_id", "the order it concerns"),
            ),
            handlers.open_case(
                conn, CUSTOMERS, handlers.Link(ORDERS, "an order"), "tickets", ticket
            ),
            mutating=True,
        ),
        BoundTool(
            Verb.UPDATE_CASE,
            "update_ticket",
            "Change a ticket's status, priority or assignee.",
            closed_schema(
                text("ticket_id", "the ticket", required=True),
                text("status", "new status", enum=list(w.TICKET_STATUSES)),
                text("priority", "new priority", enum=list(w.PRIORITIES)),
                text("assignee", "new assignee", maxLength=200),
                text("resolution", "resolution text", maxLength=2000),
            ),
            handlers.update_case(conn, TICKETS, ("status", "priority", "assignee", "resolution")),
            mutating=True,
        ),
        BoundTool(
            Verb.PRIVILEGED_WRITE,
            "issue_refund",
            "Refund part of an order. The refund policy decides; the reason is audited only.",
            closed_schema(
                text("order_id", "the order", required=True),
                integer("amount_cents", "amount in cents", required=True),
                text("reason", "why (audit log only)", maxLength=2000),
            ),
            issue_refund,
            mutating=True,
            privileged=True,
        ),
        BoundTool(
            Verb.LOOKUP_POLICY,
            "lookup_refund_policy",
            "Refund policies, for one tier or all.",
            closed_schema(text("tier", "only this tier", enum=list(w.TIERS))),
            handlers.lookup_policy(conn, "refund_policies", [("tier = ?", "tier")], "policy_id"),
        ),
    ]
