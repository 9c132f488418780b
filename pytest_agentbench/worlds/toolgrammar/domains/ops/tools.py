"""The ops world's bound verbs (§1): eight tools of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import day
from pytest_agentbench.worlds.toolgrammar.domains.ops.policy import refund_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import (
    DEFAULT_LIMIT,
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    fail,
    integer,
    limit_param,
    listing,
    ok,
    text,
)
from pytest_agentbench.worlds.toolgrammar.privileged import guarded_write
from pytest_agentbench.worlds.toolgrammar.records import (
    DATE_PATTERN,
    insert,
    many,
    next_id,
    one,
    update_fields,
    where,
)

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

SUMMARY = "customer_id, name, email, region, tier"


def tools(sandbox: Sandbox) -> Sequence[BoundTool]:
    conn = sandbox.conn

    def search_customers(args: dict[str, Any]) -> Envelope:
        pattern = f"%{args['query'].lower()}%"
        extra, values = where([("region = ?", args.get("region")), ("tier = ?", args.get("tier"))])
        rows = many(
            conn,
            f"SELECT {SUMMARY} FROM customers WHERE (LOWER(name) LIKE ? OR LOWER(email) LIKE ? "
            f"OR LOWER(customer_id) = ?){extra} ORDER BY customer_id",
            [pattern, pattern, args["query"].lower(), *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    def get_customer(args: dict[str, Any]) -> Envelope:
        row = one(conn, "customers", "customer_id", args["customer_id"])
        if row is None:
            return fail("not_found", f"no customer {args['customer_id']!r}")
        return ok(row)

    def get_order(args: dict[str, Any]) -> Envelope:
        row = one(conn, "orders", "order_id", args["order_id"])
        if row is None:
            return fail("not_found", f"no order {args['order_id']!r}")
        return ok(row)

    def list_orders(args: dict[str, Any]) -> Envelope:
        if one(conn, "customers", "customer_id", args["customer_id"]) is None:
            return fail("not_found", f"no customer {args['customer_id']!r}")
        extra, values = where(
            [
                ("status = ?", args.get("status")),
                ("placed_date >= ?", args.get("since")),
                ("placed_date <= ?", args.get("until")),
            ]
        )
        rows = many(
            conn,
            "SELECT order_id, placed_date, status, total_cents FROM orders "
            f"WHERE customer_id = ?{extra} ORDER BY placed_date, order_id",
            [args["customer_id"], *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    def create_ticket(args: dict[str, Any]) -> Envelope:
        if one(conn, "customers", "customer_id", args["customer_id"]) is None:
            return fail("not_found", f"no customer {args['customer_id']!r}")
        order_id = args.get("order_id")
        if order_id is not None:
            order = one(conn, "orders", "order_id", order_id)
            if order is None or order["customer_id"] != args["customer_id"]:
                return fail("order_mismatch", f"{order_id!r} is not an order of this customer")
        row = {
            "ticket_id": next_id(conn, "tickets", "TKT"),
            "customer_id": args["customer_id"],
            "order_id": order_id,
            "subject": args["subject"],
            "body": args.get("body", ""),
            "status": "open",
            "priority": args.get("priority", "normal"),
            "assignee": "",
            "created_date": day(0),
            "updated_date": day(0),
            "resolution": "",
        }
        insert(conn, "tickets", row)
        return ok(row)

    def update_ticket(args: dict[str, Any]) -> Envelope:
        ticket = one(conn, "tickets", "ticket_id", args["ticket_id"])
        if ticket is None:
            return fail("not_found", f"no ticket {args['ticket_id']!r}")
        updated = update_fields(
            conn,
            "tickets",
            key="ticket_id",
            row=ticket,
            fields=("status", "priority", "assignee", "resolution"),
            arguments=args,
            today=day(0),
        )
        if updated is None:
            return fail("nothing_to_update", "name at least one field to change")
        return ok(updated)

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

    def lookup_refund_policy(args: dict[str, Any]) -> Envelope:
        extra, values = where([("tier = ?", args.get("tier"))])
        rows = many(conn, f"SELECT * FROM refund_policies WHERE 1 = 1{extra} ORDER BY 1", values)
        return ok(rows, [row["policy_id"] for row in rows])

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
            search_customers,
        ),
        BoundTool(
            Verb.GET_PRINCIPAL,
            "get_customer",
            "One customer by id.",
            closed_schema(text("customer_id", "e.g. CUS-00001", required=True)),
            get_customer,
        ),
        BoundTool(
            Verb.GET_RECORD,
            "get_order",
            "One order by id.",
            closed_schema(text("order_id", "e.g. ORD-00001", required=True)),
            get_order,
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
            list_orders,
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
            create_ticket,
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
            update_ticket,
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
            lookup_refund_policy,
        ),
    ]
