"""eventlake.local.processes: is a pid alive, and stopping processes and groups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from eventlake.local import processes

#: Notes each SIGTERM in the file named by argv[1] and carries on.
NOTES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: open(sys.argv[1], 'a').write('TERM'))\n"
    "open(sys.argv[1], 'a').write('up')\n"
    "time.sleep(60)\n"
)


def test_a_child_that_exited_is_not_alive_although_unreaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while processes.alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Still a zombie (not reaped): kill(0) answers, the check must look at its state.
    assert not processes.alive(child.pid)
    child.wait()


def test_stop_ends_a_process() -> None:
    child = subprocess.Popen(["sleep", "60"])
    processes.stop([child.pid], timeout=5)
    assert not processes.alive(child.pid)


def test_stop_sends_sigterm_then_kills_a_process_that_stays(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    child = subprocess.Popen([sys.executable, "-c", NOTES_SIGTERM, str(notes)])
    while not notes.exists() or notes.read_text() != "up":
        time.sleep(0.05)
    processes.stop([child.pid], timeout=1)
    assert notes.read_text() == "upTERM"
    assert not processes.alive(child.pid)


def test_stop_of_a_group_ends_the_children_too() -> None:
    leader = subprocess.Popen(
        ["bash", "-c", "sleep 60 & echo $!; wait"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    processes.stop([leader.pid], group=True, timeout=5)
    leader.wait(timeout=1)
    assert not processes.alive(grandchild)
    assert not processes.alive(leader.pid, group=True)


def test_a_recorded_process_runs_while_its_pid_and_start_time_match() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        record = processes.Recorded.of(child.pid)

        assert record.running()
        # The same pid with another start time: the pid was reused by someone else.
        assert not processes.Recorded(child.pid, (record.started or 0) + 1).running()
    finally:
        child.kill()
        child.wait()
    assert not record.running()


def test_a_group_whose_leader_exited_is_still_running_while_a_member_runs() -> None:
    leader = subprocess.Popen(
        ["bash", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True
    )
    assert leader.stdout is not None
    member = int(leader.stdout.readline())
    record = processes.Recorded.of(leader.pid)
    leader.wait()
    try:
        assert record.running(group=True)
        assert not record.running()
    finally:
        processes.stop([leader.pid], group=True, timeout=5)
    assert not processes.alive(member)


def test_records_round_trip_and_an_older_bare_pid_is_never_ours(tmp_path: Path) -> None:
    path = tmp_path / "pids.json"
    processes.write_records(path, {"broker": processes.Recorded.of(os.getpid())})
    assert processes.running_records(path) == {"broker": os.getpid()}

    path.write_text(json.dumps({"broker": os.getpid()}))
    assert processes.read_records(path) == {"broker": processes.Recorded(os.getpid(), None)}
    assert processes.running_records(path) == {}


def test_unreadable_records_are_no_records(tmp_path: Path) -> None:
    path = tmp_path / "pids.json"
    path.write_text("{not json")

    assert processes.read_records(path) == {}
    assert processes.read_records(tmp_path / "missing.json") == {}


def test_a_start_time_is_the_kernels_clock_ticks_after_boot() -> None:
    # Records written before psutil held /proc/<pid>/stat's field 22: they still match.
    stat = Path(f"/proc/{os.getpid()}/stat").read_text()
    assert processes.started_ticks(os.getpid()) == int(stat.rsplit(") ", 1)[1].split()[19])


def test_what_has_no_process_has_no_start_time_command_line_or_life() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    for pid in (child.pid, -1):
        assert processes.started_ticks(pid) is None
        assert processes.command_line(pid) == []
        assert not processes.alive(pid)


def test_the_command_line_is_the_processes_arguments_but_empty_ones() -> None:
    arguments = [sys.executable, "-c", "import time; time.sleep(60)", "", "x y"]
    child = subprocess.Popen(arguments)
    try:
        deadline = time.monotonic() + 10
        # Until its exec, the child runs with this process's arguments.
        while processes.command_line(child.pid)[:2] != arguments[:2]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert processes.command_line(child.pid) == [*arguments[:3], "x y"]
    finally:
        child.kill()
        child.wait()


def test_a_process_another_parent_has_not_reaped_is_gone_at_once() -> None:
    # Its parent starts it and never waits for it: a zombie that is not our child.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time; print(subprocess.Popen(['true']).pid, flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        zombie = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while processes.alive(zombie) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes.alive(zombie)
        started = time.monotonic()
        processes.stop([zombie], timeout=30)
        assert processes.wait_gone([zombie], timeout=30) == []
        assert time.monotonic() - started < 5
    finally:
        parent.kill()
        parent.wait()


def test_a_short_command_that_fails_raises_the_given_error_with_its_output_tail(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-c", "import sys; print('out'); sys.exit('bad disk')"]
    try:
        processes.run_to_end(
            command, what="Formatting", error=LookupError, cwd=tmp_path, after=" (see log)"
        )
    except LookupError as error:
        assert str(error) == "Formatting failed (1):\nout\nbad disk\n (see log)"
    else:
        raise AssertionError("a failing command raised nothing")


def test_a_short_command_that_succeeds_raises_nothing(tmp_path: Path) -> None:
    processes.run_to_end(["true"], what="Nothing", error=LookupError, cwd=tmp_path)
