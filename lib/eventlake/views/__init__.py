"""Reading the events downstream: ``query`` (the tables and views by name for SQL),
``event_types`` (a typed view per event type and its kept columns), ``dataschema`` (a
type's JSON Schema as Spark types) and ``duplicates`` (repeats of an event by
``(source, id)``).
"""
