"""Typed tables: one Delta table per event type (``typed/<type>``), its attributes and
its data's top-level fields as plain columns, kept current from ``events`` exactly once
with marks of their own in the ledger; readable by any Delta reader, VARIANT or not."""
