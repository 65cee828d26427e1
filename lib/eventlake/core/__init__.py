"""The bottom layer: what every other package shares, with no pyspark, no JVM and no
Kafka client.

* ``settings``: the one settings object (``EVENTLAKE_*`` environment overrides);
* ``errors``: :class:`~eventlake.core.errors.EventlakeError` and its two kinds,
  ``Refused`` (exit 2) and ``TryAgainLater`` (exit 75);
* ``topic_names``, ``offset_specs``: Kafka's topic-name rule and the offset forms the
  jobs take, checked once for the CLI and the DAGs;
* ``driver_work``: what a job's driver does, which sizes its JVM;
* ``engine_internals``: every engine internal eventlake relies on (Spark, Delta, Great
  Expectations, the Airflow Spark provider, Airflow's API server), with the versions
  it was checked with and its test;
* ``text_table``: aligned text output;
* ``progress``: the library's progress lines, through logging (the command shows them).

Not here: anything that opens a file, a connection or a Spark session.
"""
