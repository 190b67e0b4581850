package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errorText is a promise's or a commit's error as the history keeps it: a broker's answer is
// "NAME: description" (kerr's words), the client's own errors their words.
func errorText(err error) string {
	return err.Error()
}

// highWatermark is what the client knew of the partition's end when it returned the records: the
// high watermark, or under read_committed the last stable offset, as the fetch response carried it.
func highWatermark(p kgo.FetchPartition, readCommitted bool) any {
	if readCommitted {
		if p.LastStableOffset >= 0 {
			return p.LastStableOffset
		}
		return nil
	}
	if p.HighWatermark >= 0 {
		return p.HighWatermark
	}
	return nil
}

// runConsumer reads every partition from offset 0 with no group and writes, for each partition a
// fetch returned records of, {"p": partition, "ts": poll_ts_ms, "hw": hw} and then one
// [offset, value] per record. Bare (Config.Bare), it records nothing and says how many records it
// read between its first and its last fetch that returned any: the throughput a recording consumer
// is measured against (benchmarks/consumer.py), as goprotocol.RunConsumer's bare reader does.
func runConsumer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	opts, err := clientOptions(cfg.Properties)
	if err != nil {
		return err
	}
	start := map[int32]kgo.Offset{}
	for p := int32(0); p < cfg.Partitions; p++ {
		start[p] = kgo.NewOffset().AtStart()
	}
	opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: start}),
		kgo.WithLogger(stderrLogger()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	readCommitted := cfg.Properties["isolation.level"] == "read_committed"
	f, err := os.Create(cfg.History)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	cmds := gp.ReadCommands()
	cmds.AwaitGo()
	var n, first, last int64 // records read; the first and the last fetch's times (ms) that returned any
	var rows []byte          // one partition's rows of a fetch, written at once
	for !cmds.Stopping() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		ts := gp.NowMs()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", t, p, err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			if cfg.Bare {
				if first == 0 {
					first = ts
				}
				last = ts
				n += int64(len(p.Records))
				return
			}
			rows = gp.AppendHead(rows[:0], p.Partition, ts, highWatermark(p.FetchPartition, readCommitted))
			for _, r := range p.Records {
				rows = gp.AppendRow(rows, r.Offset, r.Value)
				n++
			}
			w.Write(rows)
		})
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	gp.Say(map[string]any{"t": "done", "read": n, "first_ms": first, "last_ms": last})
	return nil
}
