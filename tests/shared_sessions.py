"""A pytest session that several tests assert, each its own slice of one project; and
fresh interpreters a test asks what they imported.

pytester is function-scoped: a module-scoped fixture builds its project under
``tmp_path_factory`` and runs it here, in a subprocess with a generous limit of the
test's own (never the mechanism under test), the way pytester's subprocess runs do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import INNER_SESSION_OPTIONS


def run_session(
    project: Path, *args: str, timeout: float, safe_path: bool = False
) -> pytest.RunResult:
    """Run ``python -m pytest *args`` in ``project`` as a session of its own.

    ``safe_path``: ``python -P -m pytest``, which leaves ``project`` off ``sys.path``
    as the ``pytest`` command does.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    # The outer session's own settings (and, under xdist, its worker's identity) are not
    # the inner session's: it starts lean, like every session a test starts.
    env["PYTEST_ADDOPTS"] = INNER_SESSION_OPTIONS
    env["PY_COLORS"] = "0"
    env["HOME"] = str(project)
    interpreter_options = ["-P"] if safe_path else []
    done = subprocess.run(
        [sys.executable, *interpreter_options, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return pytest.RunResult(
        done.returncode,
        done.stdout.splitlines(),
        done.stderr.splitlines(),
        0.0,  # its duration is no part of what a test asserts
    )


def run_probe(code: str) -> Any:
    """Run ``code`` in a fresh interpreter (nothing this process imported is loaded there);
    return the JSON document it prints."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout)
