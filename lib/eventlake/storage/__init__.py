"""The warehouse's store, the one seam to where its files live.

* ``store``: every read, write, listing and removal of a file under the warehouse,
  and every Delta table opened without Spark (delta-rs with the location's storage
  options); the local file system today;
* ``leases``: a lease, one holder at a time with a record of who (the protocol, and a
  lock file as its one implementation today);
* ``files``: a local file written whole or not at all.

Not here: Delta tables' meaning (:mod:`eventlake.warehouse`) or Spark's own reads and
writes, which take the warehouse's paths from the settings.
"""
