"""How a job runs: ``streaming`` (the micro-batch runner: triggers, progress lines,
graceful stop), ``stop_signals`` (what SIGTERM and SIGINT do), ``summary`` (what every
run counts), ``offset_log`` (what Spark planned for a micro-batch) and ``lineage``
(OpenLineage run events).
"""
