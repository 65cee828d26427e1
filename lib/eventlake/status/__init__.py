"""Where the warehouse stands, without Spark: ``report`` (``eventlake status``: each
checkpoint's marks against Kafka's offsets, the compaction risks, the last quality
verdict), ``pending`` (whether a run has anything to land, checked before Spark starts)
and ``dq_verdicts`` (the newest quality verdict per topic).
"""
