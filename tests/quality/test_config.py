"""Data-quality rules: defaults, per-topic overrides, the environment, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlake.core.settings import load_settings
from eventlake.quality.config import CheckName, QualityConfigError, load_quality_config


def test_topic_overrides_merge_with_defaults_and_severities() -> None:
    config = load_quality_config(
        {
            "defaults": {"max_rejects_rate": 0.01, "severity": {"row_count": "error"}},
            "topics": {"orders": {"keyed": True, "severity": {"unique_source_id": "error"}}},
        }
    )
    rules = config.rules_for("orders")
    assert (rules.keyed, rules.max_rejects_rate) == (True, 0.01)
    assert rules.severity_of(CheckName.ROW_COUNT) == "error"
    assert rules.severity_of(CheckName.UNIQUE_SOURCE_ID) == "error"
    assert config.rules_for("other").keyed is False


def test_quality_config_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_QUALITY", '{"topics": {"orders": {"min_rows": 5}}}')
    config = load_quality_config(load_settings().quality)
    assert config.rules_for("orders").min_rows == 5


def test_invalid_quality_config_names_the_field() -> None:
    said = r"^EVENTLAKE_QUALITY\.defaults\.max_rejects_rate: "
    with pytest.raises(QualityConfigError, match=said):
        load_quality_config({"defaults": {"max_rejects_rate": 2}})


def test_override_that_breaks_row_bounds_is_refused_when_the_rules_are_read() -> None:
    # Before any check runs: the topic's overrides merged with the defaults break a rule.
    with pytest.raises(QualityConfigError, match=r"^EVENTLAKE_QUALITY: topics\.t: .*max_rows"):
        load_quality_config({"defaults": {"min_rows": 10}, "topics": {"t": {"max_rows": 5}}})


def test_the_check_command_refuses_rules_that_do_not_hold_before_spark_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("the check started Spark before reading its rules")

    monkeypatch.setattr("eventlake.spark.session.build_spark_session", no_spark)
    rules = '{"defaults": {"max_rows": 2}, "topics": {"a": {"min_rows": 5}}}'
    monkeypatch.setenv("EVENTLAKE_QUALITY", rules)

    result = CliRunner().invoke(app, ["check", "--warehouse", str(tmp_path)])

    assert result.exit_code == 2, result.output
    said = "EVENTLAKE_QUALITY: topics.a: Value error, max_rows (2) is below min_rows (5)"
    assert said in result.output
