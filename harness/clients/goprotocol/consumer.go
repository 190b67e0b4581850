package goprotocol

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
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
			// This partition's rows, handed to the shared writer a chunk at a time (and whenever a
			// read comes back empty, and at the end): one lock per chunk, not per batch, which for a
			// library that returns a record at a time is per record.
			var rows []byte
			flush := func() {
				if len(rows) > 0 {
					mu.Lock()
					w.Write(rows)
					mu.Unlock()
					rows = rows[:0]
				}
			}
			defer flush()
			for !cmds.Stopping() {
				batch, hw := r.Next()
				if len(batch) == 0 {
					flush()
					continue
				}
				if cfg.Bare {
					now := NowMs()
					first.CompareAndSwap(0, now)
					last.Store(now)
					n.Add(int64(len(batch)))
					continue
				}
				rows = AppendHead(rows, p, NowMs(), hw)
				for _, rec := range batch {
					rows = AppendRow(rows, rec.Offset, rec.Value)
				}
				if len(rows) >= 1<<15 {
					flush()
				}
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

// AppendRow appends a consumer history's record row, [offset, "value"] and a newline, to buf, as
// json.Marshal would write it: by hand for a value of printable ASCII without a quote or a
// backslash (every value kchaos's producers send), through encoding/json otherwise; the value as
// the library gives it, a string or its bytes, so that no copy is made per record. A reflective
// Marshal of a fresh slice per record was most of a recording consumer's cost.
func AppendRow[V string | []byte](buf []byte, offset int64, value V) []byte {
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			row, _ := json.Marshal([]any{offset, string(value)})
			return append(append(buf, row...), '\n')
		}
	}
	buf = append(buf, '[')
	buf = strconv.AppendInt(buf, offset, 10)
	buf = append(buf, ',', '"')
	buf = append(buf, value...)
	return append(buf, '"', ']', '\n')
}

// AppendHead appends a consumer history's batch line, {"hw": hw, "p": partition, "ts": poll_ts_ms}
// and a newline, to buf, as json.Marshal of that map would write it: by hand for a high watermark
// that is an integer or nil (what every library gives), through encoding/json otherwise. A library
// that returns a record at a time (kafka-go) writes one per record.
func AppendHead(buf []byte, partition int32, ts int64, hw any) []byte {
	buf = append(buf, `{"hw":`...)
	switch v := hw.(type) {
	case nil:
		buf = append(buf, "null"...)
	case int64:
		buf = strconv.AppendInt(buf, v, 10)
	case int32:
		buf = strconv.AppendInt(buf, int64(v), 10)
	case int:
		buf = strconv.AppendInt(buf, int64(v), 10)
	default:
		b, _ := json.Marshal(v)
		buf = append(buf, b...)
	}
	buf = append(buf, `,"p":`...)
	buf = strconv.AppendInt(buf, int64(partition), 10)
	buf = append(buf, `,"ts":`...)
	buf = strconv.AppendInt(buf, ts, 10)
	return append(buf, '}', '\n')
}
