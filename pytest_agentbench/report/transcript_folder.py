"""Where a run's transcripts lie: beside its report, named after it.

Apart from :mod:`pytest_agentbench.report.transcripts`, the writer, so that a reader
asking whether the folder is there (the HTML page) loads nothing but this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

FOLDER_SUFFIX: Final = ".transcripts"


def transcripts_folder(report_path: Path) -> Path:
    """``<report>.transcripts``: beside the report, named after it."""
    return report_path.with_name(report_path.name + FOLDER_SUFFIX)
