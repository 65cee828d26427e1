"""eventlake: land CloudEvents from Kafka in Delta Lake tables.

The packages are layers, each importing only those below it (``make lint`` checks it,
with import-linter's contract in pyproject.toml), top to bottom:

* ``cli``: the ``eventlake`` command;
* ``orchestration`` (the Airflow DAGs' side) and ``local`` (the local platform);
* ``status``: where the warehouse stands, without Spark;
* ``ingest``, ``republish``, ``quality``, ``maintenance``: the jobs;
* ``state``: the current-state table per compacted topic;
* ``runs``: streaming, stop signals, run summaries, lineage;
* ``ledger``: what has landed, in the tables' own commits;
* ``views``: the tables and typed views for queries;
* ``binding``: the CloudEvents Kafka binding, decode and encode;
* ``warehouse``: the Delta tables' names, schemas and creation;
* ``spark``: sessions, conf, the JVM;
* ``kafka``: confluent-kafka clients;
* ``storage``: files of the warehouse;
* ``core``: settings, errors, names; no pyspark.
"""

__version__ = "0.1.0"
