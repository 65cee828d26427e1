"""The binding's shortcuts: each fast test may only say "certainly valid" when the exact,
slower test agrees; everything else must fall through to the exact test.

(The landing of whole records is in test_binding_conformance.py and
test_hostile_corpus.py; these check the two shortcuts on their own.)
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.binding import (
    _END_SENTINEL,
    _names_certainly_valid,
    _single_value_by_parse,
    _single_value_by_scan,
    single_json_shape,
    wrapped_for_shape,
)

DEEP = 900
TEXTS = {
    '{"a":1}': True,
    ' {"a":1} \n': True,
    '{"a":"}"}': True,
    '{"a":"\\"}"}': True,  # escaped quote: the parse cannot vouch, the scan decides
    "[1,2]": True,
    '"s"': True,
    "null": True,
    "[" * DEEP + "]" * DEEP: True,
    '{"a":1}}': False,
    '{"a":1} x': False,
    '{"a":1}, 2]': False,
    '{"a":1}]': False,
    '{"a":1},': False,
    '{"a":1}{"b":2}': False,
    "1 2": False,
    "true false": False,
    # Text that closes the wrapping array itself and supplies the sentinel: literally ...
    '{"a":1},"' + _END_SENTINEL + '"]': False,
    # ... or with the sentinel's first letter escaped.
    '{"a":1},"\\u' + f"{ord(_END_SENTINEL[0]):04x}" + _END_SENTINEL[1:] + '"]': False,
}


def test_single_json_shape_matches_the_exact_scan(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(t,) for t in TEXTS], "text string")
    rows = frame.select(
        "text",
        single_json_shape(F.col("text")).alias("shape"),
        _single_value_by_scan(F.col("text")).alias("scan"),
    ).collect()
    assert {r.text: r.shape for r in rows} == TEXTS
    assert {r.text: r.scan for r in rows} == TEXTS


def test_the_parse_shortcut_vouches_only_for_single_values(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(t,) for t in TEXTS], "text string")
    text = F.col("text")
    rows = frame.select("text", _single_value_by_parse(text, wrapped_for_shape(text)).alias("fast"))
    vouched = {r.text for r in rows.collect() if r.fast}
    assert vouched <= {t for t, single in TEXTS.items() if single}
    # The shortcut is the common path: a plain object must not fall through to the scan.
    assert '{"a":1}' in vouched


@pytest.mark.parametrize(
    ("names", "certain"),
    [
        ([], True),
        (["id", "source", "specversion", "type", "tenant42"], True),
        (["a,b"], False),  # joins like two valid names
        (["id", ""], False),
        (["Id"], False),
        (["a_b"], False),
        (["id,"], False),
        ([",", "a"], False),
        ([f"n{i}" for i in range(5000)], True),  # no regex recursion per name
    ],
)
def test_names_shortcut_is_certain_only_for_valid_names(
    spark: SparkSession, names: list[str], certain: bool
) -> None:
    frame = spark.createDataFrame([(names,)], "names array<string>")
    row = frame.select(_names_certainly_valid(F.col("names"))).first()
    assert row is not None
    assert row[0] is certain
