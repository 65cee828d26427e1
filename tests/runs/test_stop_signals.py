"""The stop signals of a job (eventlake.runs.stop_signals), in processes of their own: the
first signal asks, the second ends the process, and the stop's action runs off the main
thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path


def _run(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=cwd,
        start_new_session=True,  # a script may signal its own process group
    )


def test_the_signal_to_the_process_and_then_its_group_is_one_stop(tmp_path: Path) -> None:
    """As GNU timeout sends it: to the command, then to its whole process group."""
    done = _run(
        """
        import os, signal, time
        from eventlake.core.progress import lines_on_stdout
        from eventlake.runs.stop_signals import StopSignals
        lines_on_stdout()  # as the eventlake command does
        signals = StopSignals("job", "stopping after the batch in progress")
        with signals.installed():
            os.kill(os.getpid(), signal.SIGTERM)
            os.killpg(os.getpgid(0), signal.SIGTERM)
            time.sleep(0.3)
            print("still running, asked:", signals.signal_name, flush=True)
        """,
        tmp_path,
    )
    assert "still running, asked: SIGTERM" in done.stdout
    assert "stopping at once" not in done.stdout
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_job_command_stopped_while_its_spark_session_starts_says_so_and_exits_0(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "EVENTLAKE_WAREHOUSE": str(tmp_path / "warehouse")}
    command = [sys.executable, "-m", "eventlake.cli", "views"]
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as job:
        # The JVM's first line: the driver's JVM has started, the Spark context not yet.
        assert job.stderr is not None
        first = job.stderr.readline()
        job.send_signal(signal.SIGINT)
        out, err = job.communicate(timeout=60)
        err = first + err

    assert job.returncode == 0, out + err
    assert out.strip().endswith("views: stopped by SIGINT while starting; nothing was done")
    assert "Traceback" not in err, err


def test_a_second_signal_ends_the_process_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    done = _run(
        """
        import os, signal, time
        from eventlake.core.progress import lines_on_stdout
        from eventlake.runs.stop_signals import StopSignals
        lines_on_stdout()  # as the eventlake command does
        signals = StopSignals("job", "stopping after the batch in progress")
        with signals.installed():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.2)  # later than SAME_STOP_SECONDS: a second stop
            print("asked:", signals.signal_name, flush=True)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            print("still running", flush=True)
        """,
        tmp_path,
    )
    assert "job: SIGTERM received: stopping after the batch in progress" in done.stdout
    assert "asked: SIGTERM" in done.stdout
    assert "stopping at once" in done.stdout
    assert "still running" not in done.stdout
    assert done.returncode == 128 + signal.SIGINT
    assert time.monotonic() - started < 5


def test_the_stop_action_runs_once_on_a_thread_of_its_own(tmp_path: Path) -> None:
    done = _run(
        """
        import os, signal, threading, time
        from eventlake.runs.stop_signals import StopSignals
        ran = []
        signals = StopSignals(
            "check", "cancelling", on_stop=lambda _: ran.append(threading.current_thread())
        )
        with signals.installed():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        print("actions:", len(ran), "on main thread:", ran[0] is threading.main_thread())
        print("handler after:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        """,
        tmp_path,
    )
    assert "actions: 1 on main thread: False" in done.stdout, done.stderr
    assert "handler after: True" in done.stdout
    assert done.returncode == 0
