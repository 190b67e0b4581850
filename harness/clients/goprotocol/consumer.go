package goprotocol

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
)

// Record is one record a consumer returned: its offset and value.
type Record struct {
	Offset int64
	Value  string
}

// PartitionRead is a library's reading of one partition: Next waits a moment for records and returns
// those taken at once with the high watermark they came with (nothing: none yet); Close ends it.
type PartitionRead interface {
	Next() ([]Record, any)
	Close()
}

// RunConsumer is the recording consumer's workload, whatever its library, for a library that reads
// partition by partition: each partition read from offset 0 (open) on a goroutine of its own until
// "stop", and the history written as, for each batch, {"p": partition, "ts": poll_ts_ms, "hw": hw}
// and then one [offset, value] per record. Bare (Config.Bare), it records nothing and says how many
// records it read between its first and its last batch: the library read flat out, the throughput a
// recording consumer is measured against.
func RunConsumer(cfg Config, cmds *Commands, open func(partition int32) (PartitionRead, error)) error {
	f, err := os.Create(cfg.History)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var mu sync.Mutex
	var n atomic.Int64
	var first, last atomic.Int64 // the first and the last batch's times (ms)
	cmds.AwaitGo()
	var readers sync.WaitGroup
	for p := int32(0); p < cfg.Partitions; p++ {
		r, err := open(p)
		if err != nil {
			return err
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer r.Close()
			for !cmds.Stopping() {
				batch, hw := r.Next()
				if len(batch) == 0 {
					continue
				}
				if cfg.Bare {
					now := NowMs()
					first.CompareAndSwap(0, now)
					last.Store(now)
					n.Add(int64(len(batch)))
					continue
				}
				head, _ := json.Marshal(map[string]any{"p": p, "ts": NowMs(), "hw": hw})
				mu.Lock()
				w.Write(append(head, '\n'))
				for _, rec := range batch {
					row, _ := json.Marshal([]any{rec.Offset, rec.Value})
					w.Write(append(row, '\n'))
				}
				mu.Unlock()
				n.Add(int64(len(batch)))
			}
		}()
	}
	readers.Wait()
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	Say(map[string]any{"t": "done", "read": n.Load(), "first_ms": first.Load(), "last_ms": last.Load()})
	return nil
}
