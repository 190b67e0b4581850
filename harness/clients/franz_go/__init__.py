"""franz-go (github.com/twmb/franz-go), a Kafka client in pure Go: one program (``src/``), built per
franz-go version, a process per client speaking the process protocol of docs/drivers.md."""
