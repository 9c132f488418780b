"""The matched surface: each outcome's read requirements, encoded injectively.

A surface line is ``<outcome>:<requirement>,<requirement>,...``. The outcome key
and every tool name are RFC 3986 percent-encoded as components first (only the
unreserved characters ``A-Z a-z 0-9 - . _ ~`` stay literal, every other UTF-8
byte becomes ``%XX`` in upper-case hex), so ``%``, ``:``, ``,`` and ``=`` inside
a name can never impersonate a delimiter or the strength marker. A required
tool is its encoded component alone; an optional one appends ``=optional``.
Tools are listed in sorted order of their names, so one contract has one
surface. Names made of unreserved characters only keep their bytes, which is
why a built-in pack's surface reads exactly as the plain join of its names.

In this world a "tool" is one of the pack's named reads where it declares a
``read_contract`` over them (as the original names its reads), and
otherwise a collection of the ``retrieve`` tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pytest_agentbench.sdk import AgentbenchError, DomainPack, JsonValue
from pytest_agentbench.worlds.operations.reads import (
    COMPLETE_OUTCOME,
    pack_read_tools,
    pack_tool_contract,
)

Strength = Literal["required", "optional"]
STRENGTHS: tuple[Strength, ...] = ("required", "optional")
OPTIONAL_MARKER = "=optional"
UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = "0123456789ABCDEF"
COMPLETE_KEY = COMPLETE_OUTCOME
"""The outcome key of COMPLETE (a terminal rests on the record like an action does)."""


def encode_component(name: str) -> str:
    """``name`` as an RFC 3986 component: unreserved ASCII literal, every other byte ``%XX``."""
    return "".join(
        chr(byte) if byte in UNRESERVED else f"%{byte:02X}" for byte in name.encode("utf-8")
    )


def decode_component(component: str) -> str:
    """The name a canonical component encodes; anything else is refused.

    Canonical means: only unreserved characters and ``%XX`` with upper-case hex,
    and no escape of an unreserved byte (that would be a second spelling).
    """
    raw = bytearray()
    position = 0
    while position < len(component):
        char = component[position]
        if char == "%":
            pair = component[position + 1 : position + 3]
            if len(pair) != 2 or any(c not in _HEX for c in pair):
                raise _invalid(f"bad escape at {position} in {component!r}")
            byte = int(pair, 16)
            if byte in UNRESERVED:
                raise _invalid(f"escaped unreserved byte at {position} in {component!r}")
            raw.append(byte)
            position += 3
            continue
        if len(char.encode("utf-8")) != 1 or ord(char) not in UNRESERVED:
            raise _invalid(f"reserved character {char!r} at {position} in {component!r}")
        raw.append(ord(char))
        position += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(f"{component!r} does not encode UTF-8") from None


def encode_surface(contract: Mapping[str, Mapping[str, Strength]]) -> tuple[str, ...]:
    """One line per outcome key (sorted): ``outcome:tool,tool=optional,...``."""
    lines = []
    for outcome in sorted(contract):
        reads = contract[outcome]
        encoded = []
        for tool in sorted(reads):
            strength = reads[tool]
            if strength not in STRENGTHS:
                raise _invalid(f"unsupported strength {strength!r} for {tool!r}")
            component = encode_component(tool)
            encoded.append(component if strength == "required" else component + OPTIONAL_MARKER)
        lines.append(f"{encode_component(outcome)}:{','.join(encoded)}")
    return tuple(lines)


def decode_surface(lines: Sequence[str]) -> dict[str, dict[str, Strength]]:
    """The contract a surface encodes (the inverse of :func:`encode_surface`)."""
    contract: dict[str, dict[str, Strength]] = {}
    for line in lines:
        outcome_part, colon, requirement_part = line.partition(":")
        if not colon:
            raise _invalid(f"{line!r} has no ':'")
        outcome = decode_component(outcome_part)
        if outcome in contract:
            raise _invalid(f"outcome {outcome!r} listed twice")
        reads: dict[str, Strength] = {}
        for item in requirement_part.split(",") if requirement_part else []:
            component, equals, marker = item.partition("=")
            if equals and "=" + marker != OPTIONAL_MARKER:
                raise _invalid(f"unknown marker {'=' + marker!r} in {line!r}")
            tool = decode_component(component)
            if tool in reads:
                raise _invalid(f"tool {tool!r} listed twice in {line!r}")
            reads[tool] = "optional" if equals else "required"
        contract[outcome] = reads
    if encode_surface(contract) != tuple(lines):
        raise _invalid("not in canonical order")
    return contract


def pack_read_contract(pack: DomainPack) -> dict[str, dict[str, Strength]]:
    """What each outcome key of ``pack`` must have read (all required here).

    A pack declaring named reads and a ``read_contract`` over them has the
    contract the episode enforces, by named read (the original's tool-level
    surface). Otherwise it is derived from the pack's own ``required_reads``
    rather than restated: each action is probed with a payload naming every
    field it declares, so a pack whose read rule changes changes its surface,
    and a matched-decision-point file declaring the old surface is refused by
    name.
    """
    tools = pack_read_tools(pack)
    by_tool = pack_tool_contract(pack, tools)
    if by_tool is not None:
        return {
            outcome: dict.fromkeys(by_tool.get(outcome, ()), "required")
            for outcome in sorted({*pack.action_types, COMPLETE_KEY})
        }
    contract: dict[str, dict[str, Strength]] = {}
    for name in sorted(pack.action_types):
        action = pack.action_types[name]
        probe: dict[str, JsonValue] = {
            field: f"{field}_probe" for field in (*action.required, *action.optional)
        }
        contract[name] = {ref.collection: "required" for ref in pack.required_reads(name, probe)}
    contract[COMPLETE_KEY] = {
        ref.collection: "required" for ref in pack.required_reads(COMPLETE_KEY, {})
    }
    return contract


def pack_surface(pack: DomainPack) -> tuple[str, ...]:
    """The pack's matched surface (``action_read_requirements`` of a decision-point file)."""
    return encode_surface(pack_read_contract(pack))


def _invalid(reason: str) -> AgentbenchError:
    return AgentbenchError("invalid_matched_surface", reason, field="matched_surface")
