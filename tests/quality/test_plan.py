"""Check planning: which expectations a topic's rules give, in which order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from eventlake.quality.config import CheckName, TopicRules
from eventlake.quality.plan import plan_checks

# A plan holds Spark Columns (the conditions of offending rows): building one needs an
# active session.
pytestmark = pytest.mark.usefixtures("spark")


def test_checks_needing_topic_settings_are_off_by_default() -> None:
    planned = {p.check for p in plan_checks(TopicRules(), latest_time=datetime.now(UTC))}
    optional = {CheckName.TYPE_PATTERN, CheckName.TIME_PRESENT, CheckName.PARTITIONKEY_PRESENT}
    assert not planned & optional
    assert CheckName.SOURCE_URI_REFERENCE in planned


def test_check_selection_limits_the_plan() -> None:
    rules = TopicRules(checks=frozenset({CheckName.SPECVERSION, CheckName.ROW_COUNT}))
    planned = [p.check for p in plan_checks(rules, latest_time=datetime.now(UTC))]
    assert planned == [CheckName.SPECVERSION, CheckName.ROW_COUNT]
