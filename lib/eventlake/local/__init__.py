"""The local platform: what `make demo`, the tests and a developer's machine run.

* ``settings``: :class:`~eventlake.local.settings.LocalSettings`, the job settings plus
  the local broker's and Airflow's ports, folders and heap (same ``EVENTLAKE_*`` names);
* ``broker``: a real single-node Kafka broker (KRaft) run from the project's jars;
* ``s3_server``: a real S3 server (s3proxy) on 127.0.0.1, for a warehouse on S3;
* ``java_service``: what those two JVM servers share (pid file, start, stop);
* ``airflow``: a local Airflow 3 on the project's DAGs (api-server, scheduler,
  dag-processor on SQLite; or, for the cluster, with the triggerer on PostgreSQL);
* ``spark_standalone``, ``postgres``, ``cluster``: the local cluster, the platform as
  separate processes (Spark standalone master and workers, PostgreSQL, Airflow, broker)
  that ``eventlake cluster start|stop|status`` runs;
* ``processes``: whether a pid (or process group) runs, and SIGTERM-then-SIGKILL stops;
* ``samples``: a realistic sample stream of CloudEvents;
* ``demo``: ``make demo``, the whole platform driven through Airflow.

Not here: anything a production job runs. The jobs (ingest, state, republish, quality,
maintenance and the modules they use) never import this package; a deployment brings
its own Kafka and Airflow (docker-compose.yml is one).

Example:
    >>> from eventlake.local.broker import LocalBroker
    >>> from eventlake.local.settings import load_local_settings
    >>> LocalBroker(load_local_settings()).start().running
    True
"""
