"""Processes of the local platform: whether one is alive, and stopping it politely.

The broker is one process; each Airflow component is a process group (its own session,
so that its children stop with it). Both stop the same way: SIGTERM, wait, SIGKILL.

A pid file may outlive its process, and the pid may then belong to another program:
what the local platform starts is recorded with its start time (:class:`Recorded`),
and nothing is signalled unless the process with that pid started at that time.

What a process is, whether it still runs and when it started come from psutil; a
process group, which psutil does not know, from its signals (``killpg``).

Example:
    >>> import subprocess
    >>> sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    >>> alive(sleeper.pid)
    True
    >>> stop([sleeper.pid], group=True, timeout=5)
    >>> alive(sleeper.pid)
    False
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psutil

from eventlake.storage.files import write_atomically

#: Clock ticks per second: the unit of :func:`started_ticks`, as ``/proc`` counts.
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ComponentStatus:
    """What a status says of one process of the local platform: its pid when alive,
    where it serves, whether it answers there, and a detail (workers alive, ...)."""

    name: str
    pid: int | None
    address: str
    answering: bool
    detail: str = ""

    @property
    def running(self) -> bool:
        """Alive and answering."""
        return self.pid is not None and self.answering


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on host:port.

    Example:
        >>> port_in_use(1)
        False
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now.

    Example:
        >>> port_in_use(free_port())
        False
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int, *, group: bool = False) -> bool:
    """True while the process (or, with ``group``, any process of its group) runs.

    Example:
        >>> alive(os.getpid())
        True
    """
    if group:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # a member of another user's: the group exists
        return True
    # A zombie still has its pid; its state tells that it has exited.
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, ValueError):  # ValueError: a negative pid
        return False
    except psutil.AccessDenied:
        return True


def started_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, as ``/proc/<pid>/stat``
    field 22 says), or None when there is no such process.

    Ticks after boot, not psutil's seconds since the epoch: those move when the system
    clock is set, and a record would then no longer match its own process.

    Example:
        >>> started_ticks(os.getpid()) == started_ticks(os.getpid())
        True
    """
    try:
        created: float = psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None
    booted: float = psutil.boot_time()
    return round((created - booted) * _CLOCK_TICKS)


def command_line(pid: int) -> list[str]:
    """The arguments process ``pid`` runs with, or [] when there is no such process.

    Example:
        >>> command_line(os.getpid())[0].endswith("python") or True
        True
    """
    try:
        arguments = psutil.Process(pid).cmdline()
    except (psutil.Error, ValueError):
        return []
    return [str(argument) for argument in arguments if argument]


@dataclass(frozen=True)
class Recorded:
    """A process the local platform started: its pid and its start time."""

    pid: int
    started: int | None

    @classmethod
    def of(cls, pid: int) -> Recorded:
        """The record of running process ``pid``, taken right after starting it."""
        return cls(pid, started_ticks(pid))

    def running(self, *, group: bool = False) -> bool:
        """True while this very process runs (with ``group``: a process of its group).

        A live process with the pid but another start time is someone else's: the pid
        was reused. A group whose leader has exited is still ours while a member runs,
        since Linux gives no new process the id of a live group.

        Example:
            >>> Recorded.of(os.getpid()).running()
            True
            >>> Recorded(os.getpid(), 1).running()
            False
        """
        started = started_ticks(self.pid)
        if started is not None:
            return started == self.started and alive(self.pid, group=group)
        return group and alive(self.pid, group=True)


def write_records(path: Path, records: Mapping[str, Recorded]) -> None:
    """Record the processes ``records`` (by name) in ``path``, in one step.

    Example:
        >>> write_records(Path("var/cluster/spark/pids.json"), {"master": Recorded.of(pid)})
    """
    text = json.dumps({name: {"pid": r.pid, "started": r.started} for name, r in records.items()})
    write_atomically(path, text + "\n")


def read_records(path: Path) -> dict[str, Recorded]:
    """The records :func:`write_records` wrote in ``path`` ({} when there is none or it
    is not such a file). A bare pid of an older file has no start time: never ours.

    Example:
        >>> read_records(Path("/nonexistent/pids.json"))
        {}
    """
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(recorded, dict):
        return {}
    records = {}
    for name, entry in recorded.items():
        if isinstance(entry, dict) and isinstance(entry.get("pid"), int):
            records[str(name)] = Recorded(entry["pid"], entry.get("started"))
        elif isinstance(entry, int):
            records[str(name)] = Recorded(entry, None)
    return records


def running_records(path: Path, *, group: bool = False) -> dict[str, int]:
    """The pids of the processes recorded in ``path`` that still run, by name.

    Example:
        >>> running_records(Path("var/airflow/pids.json"), group=True)
        {'api-server': 4242, 'scheduler': 4250}
    """
    return {
        name: record.pid
        for name, record in read_records(path).items()
        if record.running(group=group)
    }


def reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie; a process
    that is not our child is left alone."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_gone(pids: Iterable[int], *, group: bool = False, timeout: float = 30.0) -> list[int]:
    """Wait up to ``timeout`` seconds until none of the processes runs (reaping our own
    children); return those still running.

    Example:
        >>> wait_gone([], timeout=1)
        []
    """
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while True:
        for pid in pids:
            reap(pid)
        running = [pid for pid in pids if alive(pid, group=group)]
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.1)


def stop(pids: Iterable[int], *, group: bool = False, timeout: float = 30.0) -> None:
    """SIGTERM each process (or process group) that runs, wait up to ``timeout`` seconds
    for all of them, then SIGKILL what is left and wait for it to go.

    Example:
        >>> stop([], timeout=1)
    """
    running = wait_gone(pids, group=group, timeout=0)
    # Taken before the wait: a pid that another process reuses meanwhile is not signalled.
    targets = {} if group else _processes(running)

    def send(pid: int, signal_number: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, psutil.NoSuchProcess, KeyError):
            # It may end between check and signal (KeyError: before it was looked up).
            if group:
                os.killpg(pid, signal_number)
            else:
                targets[pid].send_signal(signal_number)

    for pid in running:
        send(pid, signal.SIGTERM)
    for pid in wait_gone(running, group=group, timeout=timeout):
        send(pid, signal.SIGKILL)
    # A group whose members are zombies of other parents can answer for a while: bounded.
    wait_gone(running, group=group, timeout=10)


def _processes(pids: Iterable[int]) -> dict[int, psutil.Process]:
    """psutil's handle of each of ``pids`` that exists, by pid."""
    found = {}
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            found[pid] = psutil.Process(pid)
    return found


def spawn(
    command: list[str], *, log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a long-running process in its own session (so that stopping its group also
    ends its children), stdout and stderr appended to ``log``, no stdin.

    Example:
        >>> sleeper = spawn(["sleep", "60"], log=Path("/tmp/sleep.log"))
        >>> stop([sleeper.pid], group=True, timeout=5)
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
        )


def run_to_end(
    command: list[str],
    *,
    what: str,
    error: type[Exception],
    cwd: Path | None = None,
    timeout: float = 120.0,
    after: str = "",
) -> None:
    """Run a short command to its end; when it fails, raise ``error`` saying ``what``
    failed, with its exit code, the tail of its output and ``after`` (e.g. where its log is).

    Example:
        >>> run_to_end(["false"], what="Formatting the storage", error=RuntimeError)
        Traceback (most recent call last):
        RuntimeError: Formatting the storage failed (1):
    """
    result = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout
    )
    if result.returncode != 0:
        raise error(
            f"{what} failed ({result.returncode}):\n{result.stdout[-2000:]}"
            f"{result.stderr[-2000:]}{after}"
        )


def log_tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, or ``(no log)``.

    Example:
        >>> log_tail(Path("/nonexistent.log"))
        '(no log)'
    """
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
