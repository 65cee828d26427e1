"""eventlake.core.engine_internals: every engine internal eventlake uses was checked with
the engine versions installed here, each names a function and a test that exist, and
lib/jvm is built against the Spark that pyspark is."""

from __future__ import annotations

import importlib
import re

import pytest

from eventlake.core.engine_internals import (
    CHECKED_VERSIONS,
    INTERNALS,
    Internal,
    installed,
    unchecked,
)
from eventlake.core.settings import PROJECT_ROOT


@pytest.mark.parametrize("engine", sorted(CHECKED_VERSIONS))
def test_the_installed_engine_is_one_its_internals_were_checked_with(engine: str) -> None:
    problem = unchecked(engine, installed(engine))

    assert problem is None, problem


@pytest.mark.parametrize("engine", sorted(CHECKED_VERSIONS))
def test_an_unchecked_version_is_named_with_every_internal_of_its_engine(engine: str) -> None:
    problem = unchecked(engine, "9.9.9")

    assert problem is not None
    assert problem.startswith(f"{engine} 9.9.9 is not a version")
    for internal in INTERNALS:
        assert (internal.test in problem) == (internal.engine == engine), internal.function


def test_every_engine_has_internals_and_every_internal_an_engine() -> None:
    assert {i.engine for i in INTERNALS} == set(CHECKED_VERSIONS)


@pytest.mark.parametrize("internal", INTERNALS, ids=lambda i: i.function)
def test_each_internal_names_a_function_and_a_test_that_exist(internal: Internal) -> None:
    module, name = internal.function.rsplit(".", 1)
    assert hasattr(importlib.import_module(module), name), internal.function
    path, test_name = internal.test.split("::")
    assert f"def {test_name}(" in (PROJECT_ROOT / path).read_text(), internal.test


def test_lib_jvm_is_built_against_the_installed_pyspark() -> None:
    pom = (PROJECT_ROOT / "lib" / "jvm" / "pom.xml").read_text()
    (spark,) = re.findall(r"<spark.version>([^<]+)</spark.version>", pom)

    assert spark == installed("pyspark"), (
        f"lib/jvm/pom.xml builds against Spark {spark}, pyspark is {installed('pyspark')}: "
        "set spark.version there to the pyspark pin"
    )
