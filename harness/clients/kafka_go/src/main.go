// kchaos's driver for kafka-go (github.com/segmentio/kafka-go): one process per client, speaking the
// process protocol of docs/drivers.md through kchaos/goprotocol.
//
//	kchaos-kafka-go ROLE CONFIG.json
//
// ROLE is producer, consumer, member (a consumer group's: kafka-go's ConsumerGroup) or check.
// kafka-go has no idempotent or transactional producer, so there is no txn-producer or copier.
package main

import (
	"errors"
	"fmt"
	"os"

	gp "kchaos/goprotocol"

	"github.com/segmentio/kafka-go"
)

func main() {
	gp.Main("kchaos-kafka-go", map[string]func(string) error{"producer": runProducer, "consumer": runConsumer,
		"member": runMember, "check": checkProperties})
}

// errorText is a promise's or a commit's error as the history keeps it: a broker's answer as
// "NAME: description", the client's own errors in their words.
func errorText(err error) string {
	var k kafka.Error
	if errors.As(err, &k) {
		return gp.BrokerError(int(k), k.Description())
	}
	return err.Error()
}

// logger is kafka-go's log on stderr, which the harness writes to the run's client log.
func logger(prefix string) kafka.LoggerFunc {
	return func(msg string, args ...any) { fmt.Fprintf(os.Stderr, prefix+msg+"\n", args...) }
}
