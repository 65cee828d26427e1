"""Check planning: the expectations of one topic's events suite, built from its rules, and
the derived columns some of them look at.

Each :class:`SuiteCheck` pairs a GX expectation with the Spark condition of the rows
that break it, so a failed check's offending rows can be sampled with the same meaning.

Example:
    >>> rules = TopicRules(checks={CheckName.SPECVERSION, CheckName.ROW_COUNT})
    >>> [p.check.value for p in suite_checks(rules, latest_time=datetime.now(UTC))]
    ['specversion', 'row_count']"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from great_expectations.expectations.core.expect_column_value_lengths_to_be_between import (
    ExpectColumnValueLengthsToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_in_set import (
    ExpectColumnValuesToBeInSet,
)
from great_expectations.expectations.core.expect_column_values_to_be_null import (
    ExpectColumnValuesToBeNull,
)
from great_expectations.expectations.core.expect_column_values_to_match_regex import (
    ExpectColumnValuesToMatchRegex,
)
from great_expectations.expectations.core.expect_column_values_to_not_be_null import (
    ExpectColumnValuesToNotBeNull,
)
from great_expectations.expectations.core.expect_table_row_count_to_be_between import (
    ExpectTableRowCountToBeBetween,
)
from great_expectations.expectations.expectation import Expectation
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.binding.decode import PARTITIONKEY, REQUIRED_ATTRIBUTES, SPEC_VERSION
from eventlake.quality.config import CheckName, TopicRules
from eventlake.quality.model import SUITE_INDEX, SuiteCheck
from eventlake.quality.patterns import (
    ABSOLUTE_URI_PATTERN,
    MEDIA_TYPE_PATTERN,
    URI_REFERENCE_PATTERN,
)
from eventlake.spark.rows import computed_once, release
from eventlake.views.duplicates import EVENT_IDENTITY, identity_hash
from eventlake.warehouse.names import KAFKA_COORDINATES

#: The events table's columns that the checks read (and the coordinates of their samples):
#: a run reads and holds only these, never the data or the raw record.
CHECKED_COLUMNS: Final = (
    *REQUIRED_ATTRIBUTES,
    "time",
    "datacontenttype",
    "dataschema",
    "extensions",
    *KAFKA_COORDINATES,
)


#: Derived columns the expectations look at besides the table's own.
OCCURRENCES: Final = "source_id_occurrences"


INVALID_EXTENSION_NAMES: Final = "invalid_extension_names"


#: Suite parameter of time_not_future; its value is the check's start plus the skew.
LATEST_TIME_PARAMETER: Final = "latest_allowed_time"


#: Up to this many repeated (source, id) keys are sent to every task; above, the slice is
#: shuffled by key to meet them.
BROADCAST_REPEATED_MAX: Final = 1_000_000


#: Up to this many repeated identity hashes are collected to the driver and sent back to
#: the tasks; above, they are held on the executors.
COLLECTED_HASHES_MAX: Final = 10_000


@dataclass(frozen=True)
class RepeatedIdentities:
    """64-bit hashes of the ``(source, id)`` identities that occur more than once in a
    table (:func:`repeated_identities`): up to :data:`COLLECTED_HASHES_MAX` collected in
    ``few``, more held on the executors in ``held``. False when none repeats."""

    few: tuple[int, ...] = ()
    held: DataFrame | None = None

    def __bool__(self) -> bool:
        return bool(self.few) or self.held is not None


#: No identity repeats: :func:`with_occurrences` then joins nothing.
NO_REPEATS: Final = RepeatedIdentities()


def _table_keys(table_frame: DataFrame) -> DataFrame:
    # Null keys match nothing (the not-null checks report those rows): left out here.
    return table_frame.select(*EVENT_IDENTITY).where(_has_key())


def _has_key() -> Column:
    return F.col("source").isNotNull() & F.col("id").isNotNull()


def repeated_identities(
    slice_frame: DataFrame, table_frame: DataFrame, *, whole: bool
) -> RepeatedIdentities:
    """The identities of ``slice_frame`` that occur more than once in ``table_frame``
    (``whole``: the slice is the table), by hash: one Spark job, and nothing more when
    none repeats. Release :attr:`RepeatedIdentities.held` when done with it.

    Example:
        >>> bool(repeated_identities(table, table, whole=True))
        False
    """
    hashed = _table_keys(table_frame).select(identity_hash().alias(_IDENTITY_HASH))
    if not whole:
        slice_hashes = slice_frame.select(identity_hash().alias(_IDENTITY_HASH)).distinct()
        hashed = hashed.join(slice_hashes, _IDENTITY_HASH, "left_semi")
    # Counted by a 64-bit hash of the key first: the aggregate's map holds a long per key,
    # not the two strings (over 5M events in a warm process 2.7 s against 3.2-3.8 s).
    # Keys whose hash repeats are usually none; only those are counted again exactly.
    repeated = (
        hashed.groupBy(_IDENTITY_HASH).count().where(F.col("count") > 1).select(_IDENTITY_HASH)
    )
    # Collected in one job (held on the executors and counted, they took a checkpoint and a
    # count job of their own).
    few = repeated.limit(COLLECTED_HASHES_MAX + 1).collect()
    if len(few) <= COLLECTED_HASHES_MAX:
        return RepeatedIdentities(few=tuple(int(row[0]) for row in few))
    return RepeatedIdentities(held=computed_once(repeated))


def with_occurrences(
    slice_frame: DataFrame,
    table_frame: DataFrame,
    *,
    whole: bool,
    repeated: RepeatedIdentities | None = None,
) -> DataFrame:
    """Add how often each row's (source, id) occurs in the whole table.

    Duplicates of events checked in earlier slices count too: only the slice's keys are
    looked up (a semi join), so an incremental run scans two columns of the table. The
    repeated identities are found first (:func:`repeated_identities`, unless given; with
    :data:`NO_REPEATS` every keyed row counts once), then their keys are counted in jobs
    of their own and held: free them with :func:`eventlake.spark.rows.release` on the result
    when done.

    Example:
        >>> counted = with_occurrences(slice_frame, table, whole=True)
        >>> release(counted)
    """
    if repeated is None:
        repeated = repeated_identities(slice_frame, table_frame, whole=whole)
    if not repeated:
        # No key repeats: nothing to join.
        return slice_frame.withColumn(OCCURRENCES, F.when(_has_key(), F.lit(1).cast("long")))
    try:
        if repeated.held is not None:
            held = repeated.held
            among = held if held.count() > BROADCAST_REPEATED_MAX else F.broadcast(held)
        else:
            rows = [(h,) for h in repeated.few]
            spark = table_frame.sparkSession
            among = F.broadcast(spark.createDataFrame(rows, f"{_IDENTITY_HASH} long"))
        keys = list(EVENT_IDENTITY)
        counts = computed_once(
            _table_keys(table_frame)
            .join(among, identity_hash() == F.col(_IDENTITY_HASH), "left_semi")
            .groupBy(*keys)
            .agg(F.count(F.lit(1)).alias(OCCURRENCES))
            .where(F.col(OCCURRENCES) > 1)
        )
    finally:
        if repeated.held is not None:
            release(repeated.held)
    # Usually few: sent to every task, so the slice is joined where it is. Left to Spark
    # to decide at run time, the slice's own shuffle ran before the choice was made.
    if counts.count() <= BROADCAST_REPEATED_MAX:
        counts = F.broadcast(counts)
    joined = slice_frame.join(counts, keys, "left")
    return joined.withColumn(
        OCCURRENCES, F.when(_has_key(), F.coalesce(F.col(OCCURRENCES), F.lit(1)))
    )


#: Column of :func:`identity_hash` in :func:`with_occurrences`' intermediate frames.
_IDENTITY_HASH: Final = "_identity_hash"


def with_topic_columns(
    frame: DataFrame, rules: TopicRules, by_topic: Mapping[str, TopicRules] | None = None
) -> DataFrame:
    """Add the columns of per-topic rules: invalid extension names and the partitionkey.
    ``rules`` hold for every row, or, with ``by_topic``, for the topics it does not name.

    Example:
        >>> with_topic_columns(events, defaults, {"orders": orders_rules}).columns[-2:]
        ['invalid_extension_names', 'partitionkey']
    """

    def invalid_names(rules: TopicRules) -> Column:
        name_pattern = f"^[a-z0-9]{{1,{rules.max_extension_name_length}}}\\z"
        bad = F.filter(F.map_keys("extensions"), lambda name: ~name.rlike(name_pattern))
        return F.when(F.size(bad) > 0, F.array_join(F.array_sort(bad), ", "))

    invalid = invalid_names(rules)
    for topic, topic_rules in (by_topic or {}).items():
        # Only a topic whose name length differs needs a branch of its own.
        if topic_rules.max_extension_name_length != rules.max_extension_name_length:
            invalid = F.when(F.col("kafka_topic") == topic, invalid_names(topic_rules)).otherwise(
                invalid
            )
    return frame.withColumns(
        {
            INVALID_EXTENSION_NAMES: invalid,
            PARTITIONKEY: F.nullif(F.try_element_at("extensions", F.lit(PARTITIONKEY)), F.lit("")),
        }
    )


def suite_checks(
    rules: TopicRules, *, latest_time: datetime, has_occurrences: bool = True
) -> list[SuiteCheck]:
    """The expectations of one topic's events suite, in a stable order.

    ``latest_time`` is the latest ``time`` allowed (the run's start plus the skew); the
    expectation reads it from the suite parameter of that name, so the suite stays the
    same from run to run.

    Example:
        >>> rules = TopicRules(checks={CheckName.SPECVERSION})
        >>> [p.check.value for p in suite_checks(rules, latest_time=datetime.now(UTC))]
        ['specversion']
    """
    suite: list[SuiteCheck] = []

    def add(
        check: CheckName,
        text: str,
        expectation: type[Expectation],
        unexpected: Column | None,
        **kwargs: Any,
    ) -> None:
        if not rules.enabled(check):
            return
        severity = rules.severity_of(check)
        configured = expectation(
            **kwargs,
            # Replaces GX's sentence in Data Docs, so the page names the check. No "$"
            # in it: GX renders it as a template.
            description=f"{check.value} [{severity}]: {text}",
            meta={"eventlake_check": check.value, SUITE_INDEX: len(suite)},
        )
        suite.append(SuiteCheck(check, severity, configured, unexpected))

    for name in REQUIRED_ATTRIBUTES:
        add(
            CheckName.REQUIRED_NOT_NULL,
            f"{name} is present",
            ExpectColumnValuesToNotBeNull,
            F.col(name).isNull(),
            column=name,
        )
    for name in REQUIRED_ATTRIBUTES:
        add(
            CheckName.REQUIRED_NOT_EMPTY,
            f"{name} is not empty",
            ExpectColumnValueLengthsToBeBetween,
            F.col(name).isNotNull() & (F.length(name) < 1),
            column=name,
            min_value=1,
        )
    add(
        CheckName.SPECVERSION,
        f"specversion is {SPEC_VERSION}",
        ExpectColumnValuesToBeInSet,
        F.col("specversion").isNotNull() & ~F.col("specversion").isin(SPEC_VERSION),
        column="specversion",
        value_set=[SPEC_VERSION],
    )
    if has_occurrences:
        add(
            CheckName.UNIQUE_SOURCE_ID,
            "(source, id) occurs once in the whole events table",
            ExpectColumnValuesToBeBetween,
            F.col(OCCURRENCES) > 1,
            column=OCCURRENCES,
            max_value=1,
        )
    regex_checks: list[tuple[CheckName, str, str | None, str]] = [
        (
            CheckName.SOURCE_URI_REFERENCE,
            "source",
            URI_REFERENCE_PATTERN,
            "source is a URI-reference (RFC 3986)",
        ),
        (CheckName.TYPE_PATTERN, "type", rules.type_pattern, "type matches the topic's pattern"),
        (
            CheckName.DATACONTENTTYPE_MEDIA_TYPE,
            "datacontenttype",
            MEDIA_TYPE_PATTERN,
            "datacontenttype, when present, is a media type (RFC 2046)",
        ),
        (
            CheckName.DATASCHEMA_ABSOLUTE_URI,
            "dataschema",
            ABSOLUTE_URI_PATTERN,
            "dataschema, when present, is an absolute URI (RFC 3986)",
        ),
    ]
    for check, column, pattern, text in regex_checks:
        if pattern is not None:
            add(
                check,
                text,
                ExpectColumnValuesToMatchRegex,
                # As in GX (rlike, a search): a null is no mismatch.
                F.col(column).isNotNull() & ~F.col(column).rlike(pattern),
                column=column,
                regex=pattern,
            )
    add(
        CheckName.TIME_PRESENT,
        "time is present (the topic promises it)",
        ExpectColumnValuesToNotBeNull,
        F.col("time").isNull(),
        column="time",
    )
    add(
        CheckName.TIME_NOT_FUTURE,
        f"time is at most {rules.max_future_skew_seconds:g} s after the check started",
        ExpectColumnValuesToBeBetween,
        F.col("time") > F.lit(latest_time),
        column="time",
        max_value={"$PARAMETER": LATEST_TIME_PARAMETER},
    )
    add(
        CheckName.EXTENSION_NAMES,
        "extension names are lowercase letters and digits, at most "
        f"{rules.max_extension_name_length} characters",
        ExpectColumnValuesToBeNull,
        F.col(INVALID_EXTENSION_NAMES).isNotNull(),
        column=INVALID_EXTENSION_NAMES,
    )
    add(
        CheckName.PARTITIONKEY_PRESENT,
        "the partitionkey extension is present (keyed topic)",
        ExpectColumnValuesToNotBeNull,
        F.col(PARTITIONKEY).isNull(),
        column=PARTITIONKEY,
    )
    bounds = f"at least {rules.min_rows}" + (
        f" and at most {rules.max_rows}" if rules.max_rows is not None else ""
    )
    add(
        CheckName.ROW_COUNT,
        f"the slice has {bounds} events",
        ExpectTableRowCountToBeBetween,
        None,
        min_value=rules.min_rows,
        max_value=rules.max_rows,
    )
    return suite
