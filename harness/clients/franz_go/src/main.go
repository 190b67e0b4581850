// kchaos's driver for franz-go (github.com/twmb/franz-go): one process per client, speaking the
// process protocol of docs/drivers.md, as the Java driver does.
//
//	kchaos-franz-go ROLE CONFIG.json
//
// ROLE is producer, consumer, member (a consumer group's; its lines go to the file the config
// names, as librdkafka's and Java's members write them), txn-producer or copier. The process reads commands on stdin (go,
// stop, send P), writes JSON lines of what is happening on stdout and its history to the file the
// config names; franz-go's own log goes to stderr.
package main

import (
	"os"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	gp.Main("kchaos-franz-go", map[string]func(string) error{"producer": runProducer, "consumer": runConsumer,
		"member": runMember, "txn-producer": runTxnProducer, "copier": runCopier, "check": checkProperties})
}

// stderrLogger is franz-go's own log on stderr, which the harness writes to the run's logs.
func stderrLogger() kgo.Logger {
	level := kgo.LogLevelInfo
	if os.Getenv("KCHAOS_FRANZ_GO_DEBUG") != "" {
		level = kgo.LogLevelDebug
	}
	return kgo.BasicLogger(os.Stderr, level, nil)
}
