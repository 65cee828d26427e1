"""The only package that builds Spark sessions and touches py4j and the JVM.

* ``conf``: every driver's Spark conf and jar list from the settings (no pyspark: the
  DAGs build spark-submit arguments from it);
* ``session``: the one session builder, session confs for a block, the JVM's signals;
* ``rows``: rows on the driver and DataFrames computed once;
* ``columns``: column expressions built once per Spark context;
* ``kafka``: a subscribe pattern checked, a DataFrame written to a topic;
* ``auth``: a standalone cluster's RPC authentication and encryption;
* ``class_archive``: the driver's JVM class archive and its fingerprint.

The engine internals used here are listed, with their tests, in
:mod:`eventlake.core.engine_internals`.
"""
