"""How a job runs: ``streaming`` (the micro-batch runner: triggers, progress lines,
graceful stop), ``stop_signals`` (what SIGTERM and SIGINT do), ``summary`` (what every
run counts), ``request_checks`` (what every job's request is checked for),
``offset_log`` (what Spark logged for a micro-batch) and ``lineage`` (OpenLineage run
events).
"""
