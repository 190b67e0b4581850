"""Any client that speaks Kafka's verifiable-client protocol (Apache Kafka's own kafka-verifiable-producer
and kafka-verifiable-consumer by default): driver.py."""
