"""The sarama driver (github.com/IBM/sarama): a Go program per client (src/), built per sarama version."""
