"""librdkafka (through confluent-kafka) as a client library: its driver, the recording producer
and consumer, the transactional producer and the copier, and the group member's process."""
