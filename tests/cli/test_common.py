"""eventlake.cli.common: what the commands share."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from eventlake.cli.common import import_in_background
import_in_background("no_such_module_here").join(60)
import eventlake.quality
print("gx before", "great_expectations" in sys.modules)
import_in_background("eventlake.quality.run").join(300)
print("gx after", "great_expectations" in sys.modules)
"""


def test_import_in_background_loads_the_module_and_keeps_failures_quiet() -> None:
    # A fresh interpreter: in the test process the module is imported already.
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300
    )
    # The package alone does not load GX; the background import does.
    assert done.stdout.split("\n")[:2] == ["gx before False", "gx after True"]
    # A module that cannot be imported leaves it to the job's own import to say so.
    assert "no_such_module_here" not in done.stderr
