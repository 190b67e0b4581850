package main

import (
	"context"
	"fmt"
	"os"
	"time"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kgo"
)

func runProducer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	opts, err := clientOptions(cfg.Properties)
	if err != nil {
		return err
	}
	// The harness picks each record's partition: round-robin over the partitions, as every driver does.
	opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithLogger(stderrLogger()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	log, cmds := &gp.SendLog{}, gp.ReadCommands()
	// Metadata and a connection before the workload, so that the first send does not wait for them.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = cl.Ping(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("no broker answered: %w", err)
	}
	send := func(seq int64, partition int32, sent chan struct{}) {
		s := log.Add(partition)
		rec := &kgo.Record{Topic: cfg.Topic, Partition: partition, Value: []byte(gp.Value(cfg.Name, seq))}
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			if err == nil {
				log.Done(s, r.Offset, "")
			} else {
				log.Done(s, -1, errorText(err))
			}
			if sent != nil {
				close(sent)
			}
		})
	}
	// Every promise runs within the delivery timeout, which bounds each record: no timeout of its own.
	return gp.RunProducer(cfg, cmds, log, send, func() {
		if err := cl.Flush(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "flush:", err)
		}
		cl.Close()
	}, 24*time.Hour)
}
