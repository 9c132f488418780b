"""The file names of a suite folder's layout.

Imports nothing: the plugin looks for suite folders in every pytest run,
benchmarks or not, and a world's registration names its suite roots before
any world, pydantic or report module is imported.
"""

from __future__ import annotations

SUITE_FILE = "suite.yaml"
"""The declaration that makes a folder a suite folder."""

CONTAINING = " containing "
"""In a layout marker, separates its file (or file-name pattern) from the line starts it
must hold."""

CONTROLS_FILE = "controls.yaml"
"""The core's negative-control manifest, in a suite's oracle folder."""
