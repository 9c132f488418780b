"""Canonical JSON as the original computes it (format page section 9).

The project's own :func:`pytest_agentbench.sdk.canonical.canonical_json` sorts keys
by code point and writes Python floats; the original's fingerprints are taken
over JavaScript's ``JSON.stringify`` with keys sorted by UTF-16 code units. The
two differ on astral-plane keys, on floats such as ``1.0`` and ``1e21`` and on
lone surrogates, so every hash this world compares with the original goes
through :func:`canonical` here.
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

from pytest_agentbench.sdk import AgentbenchError

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def sha256_text(text: str) -> str:
    """H of a string: lowercase hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(value: Any) -> str:
    """H(C(value))."""
    return sha256_text(canonical(value))


def utf16_key(text: str) -> bytes:
    """A sort key ordering strings by UTF-16 code units, as JavaScript compares them."""
    return text.encode("utf-16-be", "surrogatepass")


def canonical(value: Any) -> str:
    """``JSON.stringify`` of ``value`` with object keys sorted by UTF-16 code units."""
    parts: list[str] = []
    _write(value, parts, "")
    return "".join(parts)


def _write(value: Any, out: list[str], path: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(number(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise AgentbenchError(
                "non_canonical_value", f"{value!r} has no JSON form", field=path or "<root>"
            )
        out.append(number(value))
    elif isinstance(value, dict):
        out.append("{")
        for index, key in enumerate(sorted(value, key=_checked_key)):
            if index:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out, f"{path}.{key}" if path else key)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, f"{path}[{index}]")
        out.append("]")
    else:
        raise AgentbenchError(
            "non_canonical_value",
            f"a {type(value).__name__} has no JSON form",
            field=path or "<root>",
        )


def _checked_key(key: Any) -> bytes:
    if not isinstance(key, str):
        raise AgentbenchError("non_canonical_value", f"object key {key!r} is not a string")
    return utf16_key(key)


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _string(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, _paired_surrogates_joined(text)) + '"'


def _paired_surrogates_joined(text: str) -> str:
    # A string read with surrogatepass may hold a valid pair as two code points;
    # JavaScript writes a valid pair as the character it encodes.
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def number(value: int | float) -> str:
    """``Number.prototype.toString`` for a finite number (shortest round-trip digits)."""
    if isinstance(value, int) and abs(value) < 10**21:
        return str(value)
    as_float = float(value)
    if as_float == 0:
        return "0"
    sign = "-" if as_float < 0 else ""
    decimal = Decimal(repr(abs(as_float)))
    digits_tuple = decimal.as_tuple()
    digits = "".join(map(str, digits_tuple.digits)).rstrip("0") or "0"
    exponent = int(digits_tuple.exponent)
    # value = 0.<digits> x 10^n
    n = len("".join(map(str, digits_tuple.digits))) + exponent
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body
