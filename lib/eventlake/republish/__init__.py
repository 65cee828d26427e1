"""Re-key and republish a topic: each record of a source topic written to a target topic
with a key from a Key Mapper, the event untouched or converted exactly between the
binary and structured content modes, header transforms and a routing trail; records
that cannot be republished go to the rejects table with a reason.

What lives here, one concern a module:

* :mod:`~eventlake.republish.request`: :class:`RepublishRequest` (the options, checked
  when made), :class:`RepublishError`, :func:`parse_pair`;
* :mod:`~eventlake.republish.routing`: what happens to each record (its new key, value and
  headers from the encoder, the reasons not to republish), and :func:`trail_entries` to
  read a trail back;
* :mod:`~eventlake.binding.encode`: the Python wrapper of the JVM encoder, the binding
  in the sender's direction: the exact conversion between content modes, the Key
  Mapper's key, the header transforms and the routing trail;
* :mod:`~eventlake.republish.run`: :func:`run_republish` (target topic, rejects table,
  streaming and bounded runs) and its :class:`RepublishSummary`;
* :mod:`~eventlake.republish.routes`: the configured routes run one after another in one
  application (``eventlake republish-routes``, the republish DAG's run).

What does not: the binding's rules (the JVM decoder in ``lib/jvm`` and
:mod:`eventlake.binding.decode`), the warehouse tables (:mod:`eventlake.warehouse.tables`), the
micro-batch runner shared with ingest (:mod:`eventlake.runs.streaming`) and the counts both
jobs' runs keep (:mod:`eventlake.runs.summary`).

Example:
    >>> from eventlake.republish import RepublishRequest, run_republish
    >>> run_republish(spark, settings, RepublishRequest(source="raw", target="orders",
    ...                                                 key_mapper="partitionkey")).line()
    'republish raw -> orders: read=10 republished=10 rejected=0 batches=1 seconds=3.0'
"""

from eventlake.republish.request import (
    DEFAULT_TRAIL_HEADER,
    RepublishError,
    RepublishRequest,
    parse_pair,
)
from eventlake.republish.routing import RepublishReason, trail_entries
from eventlake.republish.run import RepublishSummary, run_republish

__all__ = [
    "DEFAULT_TRAIL_HEADER",
    "RepublishError",
    "RepublishReason",
    "RepublishRequest",
    "RepublishSummary",
    "parse_pair",
    "run_republish",
    "trail_entries",
]
