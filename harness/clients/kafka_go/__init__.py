"""The kafka-go driver (github.com/segmentio/kafka-go): a Go program per client (src/), built per kafka-go version."""
