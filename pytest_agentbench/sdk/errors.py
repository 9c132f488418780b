"""Named, stable refusals.

Every refusal the plugin or a world makes is an :class:`AgentbenchError` with a
stable ``code`` and the place it concerns, so a user sees one line that names
the file, the line or field path, and the reason, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


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


def describe_exception(exc: BaseException) -> str:
    """``Type: first line`` of an exception, even one whose ``__str__`` raises."""
    name = type(exc).__name__
    try:
        text = str(exc).strip().splitlines()
    except BaseException:  # an adapter's exception may not render; its type still does
        return f"{name} (its message could not be rendered)"
    return f"{name}: {text[0]}" if text else name
