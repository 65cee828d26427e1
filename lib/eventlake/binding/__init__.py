"""The CloudEvents Kafka protocol binding, both directions side by side, as the
CloudEvents SDKs have them: ``decode`` (a Kafka record to an event or a reject reason,
through lib/jvm's ``cloudevents_from_kafka`` expression) and ``encode`` (an event to a
Kafka record in either content mode, with the Key Mapper's key, through
``cloudevents_to_kafka``); ``reason_counts`` counts a batch by reason in the pass that
writes it.

Not here: where decoded rows go (:mod:`eventlake.ingest`, :mod:`eventlake.republish`).
"""
