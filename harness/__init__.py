"""kchaos: a chaos-testing harness for real Apache Kafka."""

__version__ = "0.1.0"
