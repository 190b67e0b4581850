package main

import (
	"fmt"
	"os"
	"time"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

// highWatermark is what the client knew of the partition's end when a record was taken: the high
// watermark of the partition consumer's latest fetch response. sarama keeps no last stable offset,
// so a read_committed consumer's is the high watermark too (docs/drivers.md: the sarama driver).
func highWatermark(hw int64) any {
	if hw > 0 {
		return hw
	}
	return nil
}

// partitionRead is one partition's PartitionConsumer, for the shared consumer loop.
type partitionRead struct{ pc sarama.PartitionConsumer }

func (r partitionRead) Next() ([]gp.Record, any) {
	batch := take(r.pc.Messages(), 500, 200*time.Millisecond)
	recs := make([]gp.Record, len(batch))
	for i, m := range batch {
		recs[i] = gp.Record{Offset: m.Offset, Value: string(m.Value)}
	}
	return recs, highWatermark(r.pc.HighWaterMarkOffset())
}

func (r partitionRead) Close() { r.pc.AsyncClose() }

// runConsumer reads every partition from offset 0 with no group (gp.RunConsumer), a
// PartitionConsumer each.
func runConsumer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	cl, err := newClient(cfg.Properties, cfg.Topic)
	if err != nil {
		return err
	}
	consumer, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return err
	}
	defer consumer.Close()
	return gp.RunConsumer(cfg, gp.ReadCommands(), func(p int32) (gp.PartitionRead, error) {
		pc, err := consumer.ConsumePartition(cfg.Topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		go func() {
			for err := range pc.Errors() {
				fmt.Fprintln(os.Stderr, "consume:", err)
			}
		}()
		return partitionRead{pc}, nil
	})
}

// take waits up to wait for a first message, then takes what else is there at once, up to max.
func take(ch <-chan *sarama.ConsumerMessage, max int, wait time.Duration) []*sarama.ConsumerMessage {
	var batch []*sarama.ConsumerMessage
	select {
	case m, ok := <-ch:
		if !ok {
			return nil
		}
		batch = append(batch, m)
	case <-time.After(wait):
		return nil
	}
	for len(batch) < max {
		select {
		case m, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}
