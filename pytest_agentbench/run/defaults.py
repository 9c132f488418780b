"""Defaults a run's options share with their registration: constants only.

Imports nothing: the plugin registers its options in every pytest process.
"""

from __future__ import annotations

DEFAULT_MAX_OUTPUT_BYTES = 65536
"""The default limit per stored value, in bytes of canonical JSON; 0 keeps every value whole."""
