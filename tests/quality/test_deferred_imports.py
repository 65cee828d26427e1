"""Modules GX imports and the checks never use: deferred to their first use."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlake.quality.deferred_imports import DeferredModule, defer_imports


def test_importing_quality_leaves_altair_and_scipy_stats_unloaded() -> None:
    # A fresh interpreter: this one may have loaded them already. Fails when a GX upgrade
    # reads them at import (the deferral then saves nothing: drop or adjust the list).
    script = (
        "import json, sys, eventlake.quality, great_expectations; "
        "print(json.dumps({name: type(sys.modules[name]).__name__ "
        "for name in ('altair', 'scipy.stats')}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(done.stdout) == {"altair": "DeferredModule", "scipy.stats": "DeferredModule"}


@pytest.fixture
def module_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of its own, not imported yet; it counts its loads in ``loads.txt``."""
    name = "eventlake_deferred_probe"
    (tmp_path / f"{name}.py").write_text(
        "from pathlib import Path\n"
        f"with open({str(tmp_path / 'loads.txt')!r}, 'a') as log:\n"
        "    log.write('loaded\\n')\n"
        "ANSWER = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_deferred_module_loads_at_its_first_attribute_read(
    module_on_path: str, tmp_path: Path
) -> None:
    assert defer_imports((module_on_path,)) == (module_on_path,)
    probe = __import__(module_on_path)
    assert isinstance(probe, DeferredModule)
    assert not (tmp_path / "loads.txt").exists()

    assert probe.ANSWER == 42
    assert (tmp_path / "loads.txt").read_text() == "loaded\n"
    # The real module took its place; a later import gets it, without a second load.
    assert not isinstance(sys.modules[module_on_path], DeferredModule)
    assert __import__(module_on_path).ANSWER == 42
    assert (tmp_path / "loads.txt").read_text() == "loaded\n"


def test_a_module_already_imported_is_not_deferred() -> None:
    assert defer_imports(("json",)) == ()
    assert not isinstance(sys.modules["json"], DeferredModule)
