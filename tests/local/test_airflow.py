"""eventlake.local.airflow: stopping a local Airflow that another process started."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from eventlake.local import processes
from eventlake.local.airflow import PIDS_FILE, stop_local_airflow


def test_stop_local_airflow_ends_the_recorded_process_groups(tmp_path: Path) -> None:
    # Stand-ins for the components: process groups that another process started.
    components = {
        name: subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
        for name in ("api-server", "scheduler")
    }
    (tmp_path / PIDS_FILE).write_text(json.dumps({n: p.pid for n, p in components.items()}))

    assert stop_local_airflow(tmp_path)

    for process in components.values():
        process.wait(timeout=5)
        assert not processes.alive(process.pid, group=True)
    assert not (tmp_path / PIDS_FILE).exists()


def test_stop_local_airflow_says_when_none_was_running(tmp_path: Path) -> None:
    assert not stop_local_airflow(tmp_path)
