"""``eventlake maintain``: the compaction sweep of every state table, Delta OPTIMIZE
and VACUUM of every table, and the typed views' columns kept current (``run``).
"""
