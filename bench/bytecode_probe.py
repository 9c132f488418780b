"""A pytest plugin for ``bytecodes.py``: the bytecodes each function executes in the run loop.

Loaded with ``-p bytecode_probe`` (``bench/`` on ``PYTHONPATH``). From the
first case to the session's end it traces every opcode, per code object, and
writes ``count<TAB>calls<TAB>file:line:function`` lines, most first, to the
file named by ``BENCH_BYTECODES_OUT``. Tracing makes the run about twenty
times slower; the counts do not depend on the machine's load.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from types import CodeType, FrameType
from typing import Any

import pytest

_OPCODES: Counter[CodeType] = Counter()
_CALLS: Counter[CodeType] = Counter()


def _count_opcode(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        _OPCODES[frame.f_code] += 1
    return _count_opcode


def _enter(frame: FrameType, event: str, arg: Any) -> Any:
    frame.f_trace_opcodes = True
    _CALLS[frame.f_code] += 1
    return _count_opcode


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    sys.settrace(_enter)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    sys.settrace(None)
    with open(os.environ["BENCH_BYTECODES_OUT"], "w", encoding="utf-8") as out:
        for code, count in _OPCODES.most_common():
            name = f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"
            out.write(f"{count}\t{_CALLS[code]}\t{name}\n")
