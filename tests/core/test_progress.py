"""eventlake.core.progress: the library logs; the command shows the lines bare."""

from __future__ import annotations

import logging

import pytest

from eventlake.core.progress import ROOT, lines_on_stdout, progress_log


def test_progress_goes_to_stdout_and_warnings_to_stderr_as_bare_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines_on_stdout()
    progress_log("eventlake.ingest.run").info("ingest: batch 0 done, 3 records")
    progress_log("eventlake.ingest.run").warning("ingest: WARNING late")

    shown = capsys.readouterr()
    assert (shown.out, shown.err) == ("ingest: batch 0 done, 3 records\n", "ingest: WARNING late\n")


def test_showing_the_lines_twice_adds_no_second_handler() -> None:
    lines_on_stdout()
    lines_on_stdout()

    # pytest adds handlers of its own; eventlake's is one.
    ours = [
        each
        for each in logging.getLogger(ROOT).handlers
        if type(each).__module__ == ROOT + ".core.progress"
    ]
    assert len(ours) == 1


def test_librdkafka_lines_are_not_eventlake_progress() -> None:
    from eventlake.kafka.clients import CLIENT_LOG

    assert not CLIENT_LOG.name.startswith(ROOT)
