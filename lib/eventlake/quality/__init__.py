"""Data-quality checks of the events table: Great Expectations, executed by Spark.

The modules, one concern each (:mod:`eventlake.quality.run` describes a run step by step):

* ``run``: :func:`run_checks`, one run from slice to published results;
* ``request``: :class:`CheckRequest` (what to check) and :class:`QualityError`;
* ``config``: the rules per topic (``EVENTLAKE_QUALITY``), checks and severities;
* ``suite``: a topic's expectations suite from its rules, and the derived columns they read;
* ``patterns``: the attribute patterns (URI reference, absolute URI, media type);
* ``slices``: the rows a Delta table gained since a version, from the Delta log;
* ``measure``: every topic's checks counted in one aggregate pass over the slice;
* ``validation``: suites judged by GX, outcomes turned into results with samples;
* ``gx``: the GX context, validator and results; ``quiet``: GX's quiet import;
* ``deferred_imports``: modules GX imports and the checks never use, loaded at first use;
* ``results``: results, the report, and the ``dq_results`` table (written and read back).

Not here: the schema of ``dq_results`` (:mod:`eventlake.warehouse.tables`, with every warehouse
table), the ``eventlake check`` command (:mod:`eventlake.cli`), the rules' setting
(:mod:`eventlake.core.settings`) and the quality DAG's params and spark-submit plan
(:mod:`eventlake.orchestration`).

Example:
    >>> from eventlake.quality import CheckRequest, run_checks
    >>> run_checks(spark, settings, CheckRequest(topic="orders")).exit_code
    0
"""

from typing import TYPE_CHECKING, Any

# None of these imports great_expectations.
from eventlake.quality.config import (
    CheckName,
    QualityConfig,
    QualityConfigError,
    TopicRules,
    load_quality_config,
)
from eventlake.quality.deferred_imports import defer_unused_gx_imports
from eventlake.quality.quiet import quiet_gx_import_logs
from eventlake.quality.request import CheckRequest, QualityError, require_checkable
from eventlake.quality.results import CheckReport, CheckResult

# Before any module of the package can import great_expectations: its import-time loggers
# are quietened and the modules it imports for nothing deferred. Python runs this file
# before any module of the package, so importing one of them alone (eventlake.quality.suite,
# say) gets the same import.
quiet_gx_import_logs()
defer_unused_gx_imports()

if TYPE_CHECKING:
    from eventlake.quality.run import run_checks


def __getattr__(name: str) -> Any:
    # run_checks imports Great Expectations (~2.5 s): loaded when first asked for, so that
    # a request can be checked, or GX imported in the background, before that.
    if name == "run_checks":
        from eventlake.quality.run import run_checks

        return run_checks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CheckName",
    "CheckReport",
    "CheckRequest",
    "CheckResult",
    "QualityConfig",
    "QualityConfigError",
    "QualityError",
    "TopicRules",
    "load_quality_config",
    "require_checkable",
    "run_checks",
]
