package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
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

// runConsumer reads every partition from offset 0 with no group and writes, for each batch of a
// partition's records taken at once, {"p": partition, "ts": poll_ts_ms, "hw": hw} and then one
// [offset, value] per record.
func runConsumer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	cl, _, err := newClient(cfg.Properties, cfg.Topic)
	if err != nil {
		return err
	}
	consumer, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return err
	}
	f, err := os.Create(cfg.History)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var mu sync.Mutex
	var n atomic.Int64
	cmds := gp.ReadCommands()
	cmds.AwaitGo()
	var readers sync.WaitGroup
	for p := int32(0); p < cfg.Partitions; p++ {
		pc, err := consumer.ConsumePartition(cfg.Topic, p, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		go func() {
			for err := range pc.Errors() {
				os.Stderr.WriteString("consume: " + err.Error() + "\n")
			}
		}()
		readers.Add(1)
		go func(p int32) {
			defer readers.Done()
			for !cmds.Stopping() {
				batch := take(pc.Messages(), 500, 200*time.Millisecond)
				if len(batch) == 0 {
					continue
				}
				head, _ := json.Marshal(map[string]any{"p": p, "ts": gp.NowMs(), "hw": highWatermark(pc.HighWaterMarkOffset())})
				mu.Lock()
				w.Write(append(head, '\n'))
				for _, m := range batch {
					row, _ := json.Marshal([]any{m.Offset, string(m.Value)})
					w.Write(append(row, '\n'))
				}
				mu.Unlock()
				n.Add(int64(len(batch)))
			}
			pc.AsyncClose()
		}(p)
	}
	readers.Wait()
	consumer.Close()
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	gp.Say(map[string]any{"t": "done", "read": n.Load()})
	return nil
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
