"""The file names of a suite folder's layout.

Imports nothing: the plugin looks for suite folders in every pytest run,
benchmarks or not, and a world's registration names its suite roots before
any world, pydantic or report module is imported.
"""

from __future__ import annotations

SUITE_FILE = "suite.yaml"
"""The declaration that makes a folder a suite folder."""

CONTROLS_FILE = "controls.yaml"
"""The core's negative-control manifest, in a suite's oracle folder."""
