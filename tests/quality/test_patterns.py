"""The attribute patterns, as Spark (Java regex) runs them."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.quality.patterns import (
    ABSOLUTE_URI_PATTERN,
    MEDIA_TYPE_PATTERN,
    URI_REFERENCE_PATTERN,
)


@pytest.mark.parametrize(
    ("pattern", "valid", "invalid"),
    [
        (
            URI_REFERENCE_PATTERN,
            ["/tests", "https://a.example/x?y=1#z", "urn:uuid:1", "//host/p", "a%20b", "x/y:z"],
            ["not a uri", "%zz", "1abc:x", "a|b", "tab\there", "/tests\n"],
        ),
        (
            ABSOLUTE_URI_PATTERN,
            ["https://example.com/s.json", "urn:example:s", "tag:acme.com,2024:x?v=1"],
            ["/schemas/s.json", "s.json", "https://x/y#frag", "http://a b", "urn:example:s\n"],
        ),
        (
            MEDIA_TYPE_PATTERN,
            [
                "application/json",
                "application/cloudevents+json; charset=utf-8",
                'text/plain;charset="utf-8"',
                "application/vnd.acme.v1+json",
            ],
            [
                "json",
                "application/",
                "application/json;",
                "text/plain; charset",
                "a b/json",
                "application/json\n",
            ],
        ),
    ],
    ids=["uri_reference", "absolute_uri", "media_type"],
)
def test_attribute_patterns_in_spark(
    spark: SparkSession, pattern: str, valid: list[str], invalid: list[str]
) -> None:
    frame = spark.createDataFrame([(v, True) for v in valid] + [(v, False) for v in invalid])
    rows = frame.select("_2", F.col("_1").rlike(pattern).alias("ok")).collect()
    assert [r.ok for r in rows] == [r._2 for r in rows]
