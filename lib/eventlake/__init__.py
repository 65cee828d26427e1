"""eventlake: land CloudEvents from Kafka in Delta Lake tables."""

__version__ = "0.1.0"
