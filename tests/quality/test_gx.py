"""The Great Expectations wrapper: its import stays quiet under configured logging."""

from __future__ import annotations

import subprocess
import sys

import pytest


# The package, and one of its modules alone: each gets the quiet import.
@pytest.mark.parametrize("module", ["eventlake.quality", "eventlake.quality.suite"])
def test_importing_quality_keeps_gx_import_logs_quiet(module: str) -> None:
    # A fresh interpreter with logging configured at INFO, as under Airflow.
    script = (
        "import logging; logging.basicConfig(level=logging.INFO); "
        f"import {module}, great_expectations; print('imported')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "imported"
    assert "Skipping registering function" not in done.stderr
