"""The warehouse's Delta tables: ``names`` (their names and paths, no pyspark),
``schemas`` (each table's schema, once), ``tables`` (creation, appends, the rows a
commit added), ``delta_log`` (a table's log read without Spark: delta-rs and the
commit files) and ``conflicts`` (a lost commit race tried again).

Not here: what a table's rows mean (the binding, the ledger, the state tables).
"""
