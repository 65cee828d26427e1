"""The local platform stays out of production: no module outside eventlake.local imports
it, except the CLI's local commands, and those only inside the commands."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import eventlake

LIB = Path(eventlake.__file__).resolve().parent
#: The modules outside eventlake.local allowed to import it (inside their commands): the
#: CLI's local commands (broker, airflow, samples, demo) and the local cluster's.
CLI_LOCAL = (LIB / "cli" / "local.py", LIB / "cli" / "cluster.py")


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _is_local(module: str) -> bool:
    return module == "eventlake.local" or module.startswith("eventlake.local.")


def test_no_production_module_imports_the_local_platform() -> None:
    production = [
        path
        for path in LIB.rglob("*.py")
        if (LIB / "local") not in path.parents and path not in CLI_LOCAL
    ]
    assert len(production) > 20  # the walk found the package
    offenders = {
        str(path.relative_to(LIB)): sorted(filter(_is_local, _imported_modules(path)))
        for path in production
    }
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_cli_loads_no_local_module_until_a_local_command_runs() -> None:
    """The spark-submit entry points (jobs/) import eventlake.cli."""
    code = (
        "import sys, eventlake.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('eventlake.local')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
