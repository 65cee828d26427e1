"""Where the suite's time goes: seconds per test module at the end of every run, and a
JSON record of the run (``results/test-times.json``) that ``.ci/run`` reads to warn
about a slow suite.

Registered by tests/conftest.py; ``--durations=30`` in pyproject's addopts prints the
slowest tests. Under pytest-xdist the controller receives every worker's reports,
so the figures cover the whole run; a module's seconds are the sum of its tests'
set-up, call and tear-down, whichever worker ran them.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Final

import pytest

REPORT: Final = Path(__file__).resolve().parents[1] / "results" / "test-times.json"
#: Seconds per module of a reference run, for ordering a run that has no record yet.
REFERENCE: Final = Path(__file__).resolve().parent / "module-seconds.json"
#: How many of the slowest tests the JSON record keeps (as many as --durations prints).
SLOWEST: Final = 30
#: A record of fewer modules is a partial run (one file, say): no use for ordering.
MIN_MODULES_FOR_ORDER: Final = 20


def module_seconds() -> dict[str, float]:
    """Seconds per test module: this checkout's last run of the whole suite if there
    was one, else the reference run checked in beside this file."""
    for source in (REPORT, REFERENCE):
        try:
            record = json.loads(source.read_text())
        except (FileNotFoundError, ValueError):
            continue
        modules = {entry["module"]: float(entry["seconds"]) for entry in record["modules"]}
        if len(modules) >= MIN_MODULES_FOR_ORDER:
            return modules
    return {}


class SuiteTimer:
    """Adds up report durations per module and per test; writes the summary."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.per_module: defaultdict[str, float] = defaultdict(float)
        self.per_test: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.per_module[report.nodeid.split("::", 1)[0]] += report.duration
        self.per_test[report.nodeid] += report.duration

    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, exitstatus: int
    ) -> None:
        if not self.per_module:
            return
        wall = time.monotonic() - self.start
        modules = sorted(self.per_module.items(), key=lambda item: -item[1])
        total = sum(seconds for _, seconds in modules)
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", "seconds per test module (set-up + call + tear-down)")
        for module, seconds in modules:
            write(f"{seconds:8.1f}s {100 * seconds / total:5.1f}%  {module}")
        write(f"{total:8.1f}s in tests, {wall:.1f}s wall for the pytest run")
        slowest = sorted(self.per_test.items(), key=lambda item: -item[1])[:SLOWEST]
        record = {
            "wall_seconds": round(wall, 1),
            "test_seconds": round(total, 1),
            "exit_status": int(exitstatus),
            "modules": [{"module": m, "seconds": round(s, 1)} for m, s in modules],
            "slowest": [{"test": t, "seconds": round(s, 1)} for t, s in slowest],
        }
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(record, indent=2) + "\n")


def register(config: pytest.Config) -> None:
    """Time this run (xdist workers only forward their reports: the controller sums)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SuiteTimer(), "eventlake-suite-timer")
