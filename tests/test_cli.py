"""The ``eventlake`` command line as a whole: every command registered on one app, listed
in a fixed order, runnable as ``python -m eventlake.cli``."""

from __future__ import annotations

import subprocess
import sys

from typer.main import get_group

from eventlake.cli import COMMAND_ORDER, app


def test_every_command_is_registered_in_order() -> None:
    """The commands live in several modules; ``eventlake --help`` lists them as before."""
    assert list(get_group(app).commands) == [*COMMAND_ORDER, "cluster", "broker", "airflow"]


def test_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "eventlake.cli", "broker", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for command in ("start", "stop", "status"):
        assert command in result.stdout
