"""Apache Kafka's Java client (kafka-clients) as a client library: a JVM per client, by the
process protocol of docs/drivers.md; its sources in src/ and src_share/, built by build.py."""
