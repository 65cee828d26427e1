"""``state/<topic>``, the current state of a compacted topic: ``records`` (the
tombstone and latest-per-key rules), ``apply`` (a batch applied with the state marks in
one commit), ``rewrite`` (the files that hold a batch's keys written again),
``retry`` (a state commit that lost a race), ``table`` (creation, the recorded
compaction risk), ``compaction_risk`` (whether Kafka's compaction may have removed
tombstones the table never saw) and ``reconcile`` (the table rebuilt from the topic).
"""
