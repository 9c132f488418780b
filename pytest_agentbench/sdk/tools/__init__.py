"""The tool-session contract shared by every interactive world (the core knows no world).

A world declares :class:`ToolSpec` s; its adapter receives a :class:`ToolSession`
for one case and returns the world's final answer (:class:`ToolAgent`); every
call is validated, budgeted, byte-counted and recorded into a :class:`Receipt`
whose canonical partition has a stable sha256 digest. See docs/tool-sessions.md.
"""

from pytest_agentbench.sdk.tool_agent import ToolAgent
from pytest_agentbench.sdk.tools.agent import (
    ToolSessionLike,
    parse_final,
    solve_with_session,
)
from pytest_agentbench.sdk.tools.export import mcp_tools, openai_tools
from pytest_agentbench.sdk.tools.receipt import (
    EPISODE_RECEIPT_SCHEME,
    RECEIPT_SCHEME,
    AnyReceipt,
    EpisodeReceipt,
    Receipt,
    ReceiptCall,
    ReceiptCanonical,
    ReceiptObservations,
    load_receipt,
    session_receipts,
)
from pytest_agentbench.sdk.tools.records import ToolCallRecord
from pytest_agentbench.sdk.tools.schema import SchemaViolation, UnsupportedSchema, compile_schema
from pytest_agentbench.sdk.tools.session import Guard, ToolHarnessError, ToolSession
from pytest_agentbench.sdk.tools.spec import (
    BUDGET_EXHAUSTED,
    HANDLER_FAILED,
    INVALID_ARGUMENTS,
    SESSION_CLOSED,
    UNKNOWN_TOOL,
    Budget,
    ToolCallError,
    ToolDescriptor,
    ToolSpec,
)
from pytest_agentbench.sdk.tools.wrapping import fence_result

__all__ = [
    "BUDGET_EXHAUSTED",
    "EPISODE_RECEIPT_SCHEME",
    "HANDLER_FAILED",
    "INVALID_ARGUMENTS",
    "RECEIPT_SCHEME",
    "SESSION_CLOSED",
    "UNKNOWN_TOOL",
    "AnyReceipt",
    "Budget",
    "EpisodeReceipt",
    "Guard",
    "Receipt",
    "ReceiptCall",
    "ReceiptCanonical",
    "ReceiptObservations",
    "SchemaViolation",
    "ToolAgent",
    "ToolCallError",
    "ToolCallRecord",
    "ToolDescriptor",
    "ToolHarnessError",
    "ToolSession",
    "ToolSessionLike",
    "ToolSpec",
    "UnsupportedSchema",
    "compile_schema",
    "fence_result",
    "load_receipt",
    "mcp_tools",
    "openai_tools",
    "parse_final",
    "session_receipts",
    "solve_with_session",
]
