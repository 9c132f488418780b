"""pytest-agentbench's ``pytest11`` entry point, in a distribution of its own.

pytest reads the installed-file list of every distribution declaring a pytest plugin at
each start (to mark its modules for assertion rewriting): this distribution's has fewer
than ten lines, pytest-agentbench's about a thousand. The plugin itself is
:mod:`pytest_agentbench.plugin.facade`.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from types import ModuleType


def _plugin() -> ModuleType:
    installed = find_spec("pytest_agentbench")
    # Once pytest-agentbench is uninstalled (pip leaves this dependency behind), the name is
    # absent, or a namespace package with no origin: folders of bytecode pytest wrote at run
    # time, which pip does not remove. Then an empty plugin (this module, which has no
    # hooks) keeps every pytest run of the environment working.
    if installed is None or installed.origin is None:
        return sys.modules[__name__]
    from pytest_agentbench.plugin import facade

    return facade


plugin = _plugin()
