"""The single-JSON-value test refuses text that Spark's parser takes leniently, and its
shortcut may only say "certainly one value" when the exact, slower scan agrees;
everything else must fall through to the scan."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.json_shape import (
    _END_SENTINEL,
    _single_value_by_parse,
    _single_value_by_scan,
    single_json_shape,
    single_json_value,
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


def test_single_json_value_refuses_what_spark_parses_leniently(spark: SparkSession) -> None:
    texts = {
        '{"a":1}': True,
        ' [1, {"b": "}{"}]\n': True,
        '"x"': True,
        "-1.5e3": True,
        '{"a":1}}': False,  # Spark's parser stops after the object
        '{"a":1} {"b":2}': False,
        "1 2": False,
        "[1]]": False,
        "nul": False,
        "": False,
    }
    frame = spark.createDataFrame([(t,) for t in texts], "text string")
    rows = frame.select("text", single_json_value(F.col("text")).alias("ok")).collect()
    assert {r.text: r.ok for r in rows} == texts
