// kchaos's driver for sarama (github.com/IBM/sarama): one process per client, speaking the process
// protocol of docs/drivers.md through kchaos/goprotocol, as the franz-go driver does.
//
//	kchaos-sarama ROLE CONFIG.json
//
// ROLE is producer, consumer, member (a consumer group's; its lines go to the file the config
// names), txn-producer, copier or check. sarama's own log goes to stderr.
package main

import (
	"errors"
	"io"
	"log"
	"os"
	"strings"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

func main() {
	var logTo io.Writer = os.Stderr
	if len(os.Args) > 1 && os.Args[1] == "check" { // its last line on stderr is the refusal the harness shows
		logTo = io.Discard
	}
	sarama.Logger = log.New(logTo, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	gp.Main("kchaos-sarama", map[string]func(string) error{"producer": runProducer, "consumer": runConsumer,
		"member": runMember, "txn-producer": runTxnProducer, "copier": runCopier, "check": checkProperties})
}

// errorText is a promise's or a commit's error as the history keeps it: a broker's answer as
// "NAME: description", the client's own errors in their words.
func errorText(err error) string {
	var k sarama.KError
	if errors.As(err, &k) {
		return gp.BrokerError(int(k), strings.TrimPrefix(k.Error(), "kafka server: "))
	}
	return err.Error()
}
