"""Kafka through confluent-kafka, no Spark: ``clients`` (producer, admin, their
options), ``connection`` (whether the broker answers), ``topics`` (which exist, their
partitions and offsets, creating and deleting them) and ``connector_options`` (the
plain-string options of Spark's Kafka connector, built from the settings).

Not here: reading or writing Kafka through Spark (:mod:`eventlake.spark.kafka`).
"""
