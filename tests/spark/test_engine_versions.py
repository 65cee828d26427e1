"""eventlake.spark.engine_versions: the Spark internals eventlake uses were checked with this Spark."""

from __future__ import annotations

from pathlib import Path

from eventlake.core.settings import PROJECT_ROOT
from eventlake.spark.engine_versions import SPARK_INTERNALS, running_spark, unchecked_spark


def test_the_spark_in_use_is_one_every_internal_was_checked_with() -> None:
    problem = unchecked_spark(running_spark())

    assert problem is None, problem


def test_an_unchecked_spark_is_named_with_every_internal_and_its_test() -> None:
    problem = unchecked_spark("9.9.9")

    assert problem is not None
    assert problem.startswith("pyspark 9.9.9 is not a version")
    for internal in SPARK_INTERNALS:
        assert internal.function in problem and internal.test in problem


def test_each_internal_names_a_function_and_a_test_that_exist() -> None:
    import importlib

    for internal in SPARK_INTERNALS:
        module, name = internal.function.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), name), internal.function
        path, test = internal.test.split("::")
        assert f"def {test}(" in (PROJECT_ROOT / path).read_text(), internal.test
        assert Path(PROJECT_ROOT / path).is_file()
