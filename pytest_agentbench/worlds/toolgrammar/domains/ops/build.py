"""The ops world's tables (§2), built from one seeded RNG over the literal word lists."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import day, insert_rows, linked_cases

SCHEMA = """
CREATE TABLE customers (customer_id TEXT PRIMARY KEY, name TEXT, email TEXT, region TEXT,
  tier TEXT, signup_date TEXT, lifetime_value_cents INTEGER, notes TEXT);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer_id TEXT, placed_date TEXT, status TEXT,
  total_cents INTEGER, shipping_cents INTEGER, item_count INTEGER, items TEXT, carrier TEXT,
  delivered_date TEXT, notes TEXT);
CREATE TABLE tickets (ticket_id TEXT PRIMARY KEY, customer_id TEXT, order_id TEXT, subject TEXT,
  body TEXT, status TEXT, priority TEXT, assignee TEXT, created_date TEXT, updated_date TEXT,
  resolution TEXT);
CREATE TABLE refunds (refund_id TEXT PRIMARY KEY, order_id TEXT, customer_id TEXT,
  amount_cents INTEGER, reason TEXT, issued_date TEXT, approved_by TEXT);
CREATE TABLE refund_policies (policy_id TEXT PRIMARY KEY, tier TEXT, window_days INTEGER,
  max_percent INTEGER, requires_ticket INTEGER, body TEXT);
"""

COUNTS = {"customers": 320, "orders": 1400, "tickets": 420, "refunds": 90}
POLICIES = {  # tier: (window_days, max_percent, requires_ticket), as published in §2
    "free": (14, 50, 1),
    "standard": (30, 100, 1),
    "premium": (60, 100, 0),
    "enterprise": (90, 100, 0),
}


def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    customers: list[dict[str, Any]] = []
    for n in range(1, COUNTS["customers"] + 1):
        first, last = rng.choice(w.FIRST_NAMES), rng.choice(w.LAST_NAMES)
        customers.append(
            {
                "customer_id": f"CUS-{n:05d}",
                "name": f"{first} {last}",
                "email": f"{first}.{last}{n}@{rng.choice(w.EMAIL_DOMAINS)}".lower(),
                "region": rng.choice(w.REGIONS),
                "tier": rng.choices(w.TIERS, weights=(3, 4, 2, 1))[0],
                "signup_date": day(-rng.randint(400, 1500)),
                "lifetime_value_cents": 0,
                "notes": rng.choice(w.NOTE_PHRASES),
            }
        )
    orders: list[dict[str, Any]] = []
    for n in range(1, COUNTS["orders"] + 1):
        customer = rng.choice(customers)
        placed = -rng.randint(1, 400)
        status = rng.choices(w.ORDER_STATUSES, weights=(6, 10, 55, 14, 15))[0]
        lines = [(rng.choice(w.PRODUCTS), rng.randint(1, 3)) for _ in range(rng.randint(1, 3))]
        total = sum(quantity * rng.randint(5, 250) * 100 for _, quantity in lines)
        delivered = None
        if status in ("delivered", "returned"):
            delivered = day(min(0, placed + rng.randint(2, 9)))
        orders.append(
            {
                "order_id": f"ORD-{n:05d}",
                "customer_id": customer["customer_id"],
                "placed_date": day(placed),
                "status": status,
                "total_cents": total,
                "shipping_cents": rng.choice((0, 499, 999, 1499)),
                "item_count": sum(quantity for _, quantity in lines),
                "items": ", ".join(f"{product} x{quantity}" for product, quantity in lines),
                "carrier": rng.choice(w.CARRIERS),
                "delivered_date": delivered,
                "notes": rng.choice(("", *w.NOTE_PHRASES)),
            }
        )
        if status == "delivered":
            customer["lifetime_value_cents"] += total
    tickets = []
    for n, customer, linked, created in linked_cases(
        rng, customers, orders, owner="customer_id", count=COUNTS["tickets"], link_chance=0.8
    ):
        status = rng.choice(w.TICKET_STATUSES)
        subject = rng.choice(w.TICKET_SUBJECTS)
        tickets.append(
            {
                "ticket_id": f"TKT-{n:05d}",
                "customer_id": customer["customer_id"],
                "order_id": None if linked is None else linked["order_id"],
                "subject": subject,
                "body": f"Customer reports {subject}.",
                "status": status,
                "priority": rng.choice(w.PRIORITIES),
                "assignee": rng.choice(w.AGENTS),
                "created_date": day(created),
                "updated_date": day(min(0, created + rng.randint(0, 20))),
                "resolution": "resolved by agent" if status in ("resolved", "closed") else "",
            }
        )
    refundable = [order for order in orders if order["status"] in ("delivered", "returned")]
    refunds = []
    for n, order in enumerate(rng.sample(refundable, COUNTS["refunds"]), start=1):
        total = order["total_cents"]
        assert isinstance(total, int)
        assert isinstance(order["delivered_date"], str)
        refunds.append(
            {
                "refund_id": f"REF-{n:05d}",
                "order_id": order["order_id"],
                "customer_id": order["customer_id"],
                "amount_cents": total * rng.randint(10, 50) // 100,
                "reason": rng.choice(w.TICKET_SUBJECTS),
                "issued_date": order["delivered_date"],
                "approved_by": rng.choice(w.AGENTS),
            }
        )
    policies = [
        {
            "policy_id": f"RP-{n}",
            "tier": tier,
            "window_days": window,
            "max_percent": percent,
            "requires_ticket": ticket,
            "body": (
                f"{tier.capitalize()} customers may be refunded up to {percent}% of an order "
                f"within {window} days of delivery"
                + (", with a support ticket on the order." if ticket else ".")
            ),
        }
        for n, (tier, (window, percent, ticket)) in enumerate(POLICIES.items(), start=1)
    ]
    insert_rows(conn, "customers", customers)
    insert_rows(conn, "orders", orders)
    insert_rows(conn, "tickets", tickets)
    insert_rows(conn, "refunds", refunds)
    insert_rows(conn, "refund_policies", policies)
