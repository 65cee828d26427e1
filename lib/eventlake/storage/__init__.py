"""Where the warehouse's files live: ``files`` writes a file whole or not at all.

Not here: Delta tables (:mod:`eventlake.warehouse`) or Spark's own files.
"""
