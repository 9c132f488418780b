"""Named, stable refusals.

Every refusal the plugin or a world makes is an :class:`AgentbenchError` with a
stable ``code`` and the place it concerns, so a user sees one line that names
the file, the line or field path, and the reason, never a traceback.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, NamedTuple


class ErrorLocation(NamedTuple):
    """Where a refusal points: a file, optionally a line and a field path.

    A named tuple rather than a frozen dataclass: every pytest run with the plugin
    installed imports this module, and making a dataclass costs most of a
    millisecond, a named tuple a tenth of that.
    """

    file: str | None = None
    line: int | None = None
    field: str | None = None

    def render(self) -> str:
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file if self.line is None else f"{self.file}:{self.line}")
        if self.field:
            parts.append(self.field)
        return ": ".join(parts)


class AgentbenchError(Exception):
    """A refusal with a stable code, a location and a one-line reason."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.code = code
        self.reason = message
        self.location = ErrorLocation(
            file=None if file is None else str(file), line=line, field=field or None
        )
        super().__init__(self.render())

    def render(self) -> str:
        where = self.location.render()
        prefix = f"[{self.code}] "
        return f"{prefix}{where}: {self.reason}" if where else f"{prefix}{self.reason}"

    def at(
        self, *, file: str | Path | None = None, line: int | None = None, field: str | None = None
    ) -> AgentbenchError:
        """The same refusal, located (fields already set are kept)."""
        loc = self.location
        return AgentbenchError(
            self.code,
            self.reason,
            file=loc.file if loc.file is not None else file,
            line=loc.line if loc.line is not None else line,
            field=loc.field if loc.field else field,
        )


class UsageError(AgentbenchError):
    """A command-line or configuration mistake: pytest exits with code 4."""


def field_path(parts: tuple[int | str, ...] | list[int | str]) -> str:
    """Render a pydantic-style location tuple as ``a.b[2].c``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


MAX_REASON_CHARS = 2000
"""How much of a failure reason a case keeps: it is repeated in the terminal, JUnit and JSON."""


def cap_text(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated: {len(text)} characters in all]"


@functools.cache
def _lone_surrogate() -> re.Pattern[str]:
    """A code point no UTF-8 text holds: Python strings carry them (``surrogateescape``, a
    JSON ``\\udc80`` escape, an adapter's own string); every file, pipe and terminal refuses
    them. Compiled on first use: the class costs a quarter of a millisecond to compile, in
    every pytest process of an environment with the plugin, and ASCII text never needs it."""
    return re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    return not text.isascii() and _lone_surrogate().search(text) is not None


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\udc80``): UTF-8 text.

    Applied where text from outside (an adapter's exception, a world's reason) becomes
    a record's: otherwise the first file or pipe that encodes it raises.
    """
    if not has_surrogates(text):
        return text
    return _lone_surrogate().sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def escape_surrogates_json(value: Any) -> Any:
    """A JSON value with every string (keys too) passed through :func:`escape_surrogates`."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {escape_surrogates(str(k)): escape_surrogates_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_surrogates_json(item) for item in value]
    return value


_MAY_HOLD_TEXT = (str, dict, list, tuple)
"""What a JSON value holding a lone surrogate can be: a number, a bool or null holds none."""


def first_surrogate_path(value: Any, path: str = "") -> str | None:
    """Where in a JSON value the first lone surrogate is (``<root>``, ``a.b[2]``), if any."""
    if isinstance(value, str):
        return (path or "<root>") if has_surrogates(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and has_surrogates(key):
                return escape_surrogates(f"{path}.{key}" if path else key)
            # Scalars are not descended into: an output's numbers are most of its values.
            if isinstance(item, _MAY_HOLD_TEXT):
                found = first_surrogate_path(item, f"{path}.{key}" if path else str(key))
                if found is not None:
                    return escape_surrogates(found)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if isinstance(item, _MAY_HOLD_TEXT):
                found = first_surrogate_path(item, f"{path}[{index}]")
                if found is not None:
                    return found
    return None


def describe_exception(exc: BaseException) -> str:
    """``Type: first line`` of an exception, even one whose ``__str__`` raises.

    Lone surrogates in the message are escaped (:func:`escape_surrogates`).
    """
    name = type(exc).__name__
    try:
        text = str(exc).strip().splitlines()
    except BaseException:  # an adapter's exception may not render; its type still does
        return f"{name} (its message could not be rendered)"
    return escape_surrogates(f"{name}: {text[0]}" if text else name)
