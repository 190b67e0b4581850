package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	gp "kchaos/goprotocol"

	"github.com/segmentio/kafka-go"
)

// highWatermark is the high watermark of the fetch response a message came in (kafka-go keeps no
// last stable offset, so a read_committed reader's is the high watermark too).
func highWatermark(m kafka.Message) any {
	if m.HighWaterMark > 0 {
		return m.HighWaterMark
	}
	return nil
}

// markerShaped says whether a message has a transaction marker's shape: a control record's key
// (version 0, type 0 abort or 1 commit) and value (version 0 and the coordinator's epoch). kchaos's
// producers write no keys, so on its topics such a message is a marker kafka-go returned as a record;
// each is logged, the line a known issue's record looks for (harness/checker/known_issues.py).
func markerShaped(m kafka.Message) bool {
	k, v := m.Key, m.Value
	return len(k) == 4 && k[0] == 0 && k[1] == 0 && k[2] == 0 && k[3] <= 1 && len(v) == 6 && v[0] == 0 && v[1] == 0
}

func logIfMarker(m kafka.Message) {
	if markerShaped(m) {
		fmt.Fprintf(os.Stderr, "kafka-go returned a transaction marker as a record: %s[%d] offset %d\n", m.Topic,
			m.Partition, m.Offset)
	}
}

// partitionReader reads one partition from offset with kafka-go's Reader, no group.
func partitionReader(o *options, topic string, partition int, offset int64) (*kafka.Reader, error) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: o.brokers, Topic: topic, Partition: partition, MaxWait: o.maxWait,
		IsolationLevel: o.isolation, MinBytes: 1, MaxBytes: 1 << 20, ErrorLogger: logger("[kafka-go] ")})
	return r, r.SetOffset(offset)
}

// fetch waits up to 200 ms for the reader's next message.
func fetch(r *kafka.Reader) (kafka.Message, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	m, err := r.FetchMessage(ctx)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(os.Stderr, "fetch:", err)
		}
		return m, false
	}
	return m, true
}

// partitionRead is one partition's Reader, for the shared consumer loop: a record at a time.
type partitionRead struct{ r *kafka.Reader }

func (r partitionRead) Next() ([]gp.Record, any) {
	m, ok := fetch(r.r)
	if !ok {
		return nil, nil
	}
	logIfMarker(m)
	return []gp.Record{{Offset: m.Offset, Value: string(m.Value)}}, highWatermark(m)
}

func (r partitionRead) Close() { r.r.Close() }

// runConsumer reads every partition from offset 0 with no group (gp.RunConsumer), a Reader each.
func runConsumer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	o, err := optionsOf(cfg.Properties)
	if err != nil {
		return err
	}
	return gp.RunConsumer(cfg, gp.ReadCommands(), func(p int32) (gp.PartitionRead, error) {
		r, err := partitionReader(o, cfg.Topic, int(p), kafka.FirstOffset)
		return partitionRead{r}, err
	})
}
