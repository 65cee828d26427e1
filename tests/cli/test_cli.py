"""The ``eventlake`` command line as a whole: every command registered on one app, listed
in a fixed order, runnable as ``python -m eventlake.cli``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from typer.main import get_group
from typer.testing import CliRunner

from eventlake.cli import COMMAND_ORDER, app, main


def test_every_command_is_registered_in_order() -> None:
    """The commands live in several modules; ``eventlake --help`` lists them as before."""
    assert list(get_group(app).commands) == [
        *COMMAND_ORDER,
        "cluster",
        "broker",
        "airflow",
        "s3-server",
        "metastore",
        "trino",
    ]


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


@pytest.mark.parametrize("path", list(_commands(get_group(app))), ids=" ".join)
def test_help_shows_each_paragraph_as_one_line(path: tuple[str, ...]) -> None:
    """A docstring's line breaks never show mid-sentence: on a terminal wide enough, every
    paragraph of a command's help is one line of its ``--help``, and its first one is one
    line of its group's command list."""
    command = get_group(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    paragraphs = [" ".join(p.split()) for p in (command.help or "").split("\n\n")]
    assert paragraphs[0], f"eventlake {' '.join(path)} has no help"

    def shown(*arguments: str) -> list[str]:
        result = CliRunner().invoke(app, [*arguments, "--help"], env={"COLUMNS": "2000"})
        assert result.exit_code == 0, result.output
        return [" ".join(line.strip("│ ").split()) for line in result.output.splitlines()]

    lines = shown(*path)
    for paragraph in paragraphs:
        assert paragraph in lines, f"not one line of `eventlake {' '.join(path)} --help`"
    listed = shown(*path[:-1])
    assert f"{path[-1]} {paragraphs[0]}" in listed


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


def test_a_setting_the_environment_gives_wrong_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVENTLAKE_MAX_OFFSETS_PER_TRIGGER", "-1")

    with pytest.raises(SystemExit) as exited:
        main(["status"])

    assert exited.value.code == 2
    said = capsys.readouterr().err
    assert said.startswith("error: EVENTLAKE_MAX_OFFSETS_PER_TRIGGER: Input should be greater")
    assert said.count("\n") == 1


@pytest.mark.parametrize(
    "arguments",
    [["ingest", "--topic", "orders"], ["reconcile", "--topic", "orders"], ["maintain"]],
    ids=["ingest", "reconcile", "maintain"],
)
def test_a_job_without_its_jars_is_refused_with_the_fix(
    arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit 2 and one line saying to run `make jars`, not a traceback (exit 1)."""
    monkeypatch.setenv("EVENTLAKE_JARS_DIR", str(tmp_path))
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2, result.output
    assert "Spark jars missing" in result.output
    assert "make jars" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "command",
    ["ingest", "reconcile", "compaction-check", "maintain", "status", "check", "samples"],
    ids=lambda c: c,
)
def test_a_topic_name_kafka_refuses_is_refused_in_a_sentence_before_spark_or_kafka(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No jars and no broker: a refusal that came after Spark or Kafka would say so instead.
    monkeypatch.setenv("EVENTLAKE_JARS_DIR", str(tmp_path))
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "127.0.0.1:9")

    result = CliRunner().invoke(app, [command, "--topic", "bad!topic"])

    assert result.exit_code == 2, result.output
    assert "Invalid --topic 'bad!topic': use 1-249 characters" in result.output
    assert "Traceback" not in result.output


def test_the_command_keeps_mains_exit_status_and_leaves_without_collecting() -> None:
    """``eventlake`` (``command``) ends as ``main`` does, with the collector off for the
    process's shutdown; run in a process of its own, as collection stays off after it."""
    script = (
        "import atexit, gc, sys\n"
        "frozen = lambda: bool(gc.get_freeze_count())\n"
        "atexit.register(lambda: print('collecting', gc.isenabled(), frozen()))\n"
        "from eventlake.cli import command\n"
        "command(sys.argv[1:])\n"
    )
    env = {**os.environ, "EVENTLAKE_MAX_OFFSETS_PER_TRIGGER": "-1"}
    refused = subprocess.run(
        [sys.executable, "-c", script, "status"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout.strip() == "collecting False True"
    assert "error: EVENTLAKE_MAX_OFFSETS_PER_TRIGGER" in refused.stderr


def test_a_warehouse_on_a_store_not_written_yet_is_refused_in_a_sentence() -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "eventlake.cli", "status", "--warehouse", "gs://lake/prod"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: The warehouse location 'gs://lake/prod/")
    assert "Traceback" not in refused.stderr
