"""What a check run may be asked: only the events table."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from eventlake.cli import app
from eventlake.quality.request import CheckRequest, QualityError


def test_only_the_events_table_can_be_checked() -> None:
    with pytest.raises(QualityError, match="events"):
        CheckRequest(table="rejects")


def test_cli_refuses_unknown_table_with_exit_2() -> None:
    result = CliRunner().invoke(app, ["check", "--table", "state"])
    assert result.exit_code == 2
