"""What has landed, kept in the tables' own Delta commits: ``marks`` (per table,
job, topic and partition the next offset, written with the rows; the per-topic lease),
``offset_ranges`` (the offsets a run reads, from the marks) and ``checkpoint`` (a
streaming checkpoint's identity and lock).
"""
