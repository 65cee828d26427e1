"""Data-quality checks of the events table: Great Expectations, executed by Spark.

The modules, one concern each (:mod:`eventlake.quality.run` describes a run step by step):

* ``run``: :func:`run_checks`, one run from slice to published results;
* ``request``: :class:`CheckRequest` (what to check) and :class:`QualityError`;
* ``config``: the rules per topic (``EVENTLAKE_QUALITY``), checks and severities;
* ``plan``: a topic's expectations from its rules, and the derived columns they read;
* ``patterns``: the attribute patterns (URI reference, absolute URI, media type);
* ``slices``: the rows a Delta table gained since a version, from the Delta log;
* ``measure``: every topic's checks counted in one aggregate pass over the slice;
* ``validation``: suites judged by GX, outcomes turned into results with samples;
* ``gx``: the GX context, validator and results, and GX's quiet import;
* ``results``: results, the report, and the ``dq_results`` table (written and read back).

Not here: the schema of ``dq_results`` (:mod:`eventlake.tables`, with every warehouse
table), the ``eventlake check`` command (:mod:`eventlake.cli`), the rules' setting
(:mod:`eventlake.settings`) and the quality DAG's params and spark-submit plan
(:mod:`eventlake.orchestration`).

Example:
    >>> from eventlake.quality import CheckRequest, run_checks
    >>> run_checks(spark, settings, CheckRequest(topic="orders")).exit_code
    0
"""

# First, before the modules below import great_expectations: gx quietens its import-time
# loggers. Python runs this file before any module of the package, so importing one of
# them alone (eventlake.quality.plan, say) gets the quiet import too.
from eventlake.quality import gx  # noqa: F401

# isort: split
from eventlake.quality.config import (
    CheckName,
    QualityConfig,
    QualityConfigError,
    TopicRules,
    load_quality_config,
)
from eventlake.quality.request import CheckRequest, QualityError
from eventlake.quality.results import CheckReport, CheckResult
from eventlake.quality.run import run_checks

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
    "run_checks",
]
