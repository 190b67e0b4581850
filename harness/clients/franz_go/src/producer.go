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
	done := make(chan struct{})
	go gp.Progress(&log.Sent, &log.Acked, done)
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
	cmds.AwaitGo()
	t0 := time.Now()
	if cfg.Quiet {
		gp.Quiet(cmds, send)
	} else {
		gp.Paced(cfg, cmds, send)
	}
	// Every promise has run: the delivery timeout bounds each record.
	if err := cl.Flush(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "flush:", err)
	}
	sendMs := time.Since(t0).Milliseconds()
	close(done)
	cl.Close()
	if err := log.Write(cfg.History); err != nil {
		return err
	}
	gp.Say(map[string]any{"t": "done", "sent": log.Sent.Load(), "acked": log.Acked.Load(), "sending_ms": sendMs})
	return nil
}
