"""The layout's rules (lib/eventlake/__init__.py) that import-linter's layer contract
(pyproject.toml, `make lint`) cannot state: no import circle between any two modules
(imports inside functions and type-checking blocks counted), no module over 450 lines,
and no pyspark where the DAG files, `eventlake status --json` and the Airflow status page
go (Airflow's dag-processor parses the DAG files again and again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.local.broker import LocalBroker

#: The most lines a module (Python) or a class file (Java) may have: one concern each.
MAX_LINES = 450
#: Printed by the child processes below: whether pyspark was imported at any point.
LOADED = "import atexit, sys; atexit.register(lambda: print('pyspark', 'pyspark' in sys.modules))"


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm).

    Example:
        >>> import_cycles(grimp.build_graph("eventlake"))
        []
    """
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in edges[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return cycles


def test_a_circle_of_imports_is_found() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert import_cycles(graph) == [["a.x", "a.y"]]


def test_no_two_modules_import_each_other_even_through_others() -> None:
    sys.path.insert(0, str(PROJECT_ROOT / "lib"))
    assert import_cycles(grimp.build_graph("eventlake", cache_dir=None)) == []


def test_no_module_or_java_class_is_over_450_lines() -> None:
    sources = [*(PROJECT_ROOT / "lib" / "eventlake").rglob("*.py")]
    sources += (PROJECT_ROOT / "lib" / "jvm" / "src").rglob("*.java")
    over = {
        str(path.relative_to(PROJECT_ROOT)): lines
        for path in sources
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert over == {}, f"over {MAX_LINES} lines, split by concern: {over}"


def _child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "lib"), **extra}


def _loads_pyspark(code: str, env: dict[str, str]) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", f"{LOADED}\n{code}"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    last = result.stdout.strip().splitlines()[-1:] or [""]
    assert last[0] in {"pyspark True", "pyspark False"}, result.stderr[-2000:]
    return last[0] == "pyspark True"


@pytest.mark.parametrize(
    "dag_file", sorted((PROJECT_ROOT / "dags").glob("*.py")), ids=lambda p: p.name
)
def test_parsing_a_dag_file_loads_no_pyspark(dag_file: Path, tmp_path: Path) -> None:
    env = _child_env(AIRFLOW_HOME=str(tmp_path), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    assert not _loads_pyspark(f"import runpy; runpy.run_path({str(dag_file)!r})", env)


def test_the_airflow_status_page_loads_no_pyspark(tmp_path: Path) -> None:
    code = "from eventlake.orchestration.airflow_plugin import EventlakeStatusPlugin"
    assert not _loads_pyspark(code, _child_env(AIRFLOW_HOME=str(tmp_path)))


def test_status_json_loads_no_pyspark(
    broker: LocalBroker, settings: Settings, tmp_path: Path
) -> None:
    env = _child_env(
        EVENTLAKE_WAREHOUSE=str(tmp_path / "warehouse"),
        EVENTLAKE_BOOTSTRAP_SERVERS=settings.bootstrap_servers,
    )
    code = "from eventlake.cli import command; command(['status', '--json'])"
    assert not _loads_pyspark(code, env)


def test_the_check_fails_when_a_module_loads_pyspark(tmp_path: Path) -> None:
    # The check itself: a module that does load pyspark is seen to.
    assert _loads_pyspark("import eventlake.spark.session", _child_env())
