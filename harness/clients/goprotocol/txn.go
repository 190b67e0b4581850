package goprotocol

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// TxnLog is what one transactional client records, as the contract's rows: its sends (with their
// transaction and, for a copy, its source), its transactions, and for the copier its reads and the
// offsets its committed transactions carried. Written after the workload as JSON lines, each one
// object under its kind ({"send": {...}}, {"txn": {...}}, {"read": {...}}, {"offset": {...}}).
type TxnLog struct {
	Name    string
	mu      sync.Mutex
	sends   []map[string]any
	txns    []map[string]any
	reads   []map[string]any
	offsets []map[string]any
	failed  map[string]bool // transactions a send of which failed
	Sent    atomic.Int64
	Acked   atomic.Int64
}

// Begin records a transaction begun; its row is completed by Set and End.
func (l *TxnLog) Begin() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := map[string]any{"txn": fmt.Sprintf("%s:%d", l.Name, len(l.txns)), "producer": l.Name, "outcome": "unknown",
		"begin_ts_ms": NowMs(), "commit_ts_ms": nil, "end_ts_ms": nil}
	l.txns = append(l.txns, row)
	return row
}

// Send records a send about to be handed to the client; the function it returns completes the row
// with the promise (the offset, or the error's text), then calls after.
func (l *TxnLog) Send(value, topic string, partition int32, txn string, source any, after func()) func(offset int64, errText string) {
	l.mu.Lock()
	row := map[string]any{"value": value, "seq": len(l.sends), "topic": topic, "partition": partition,
		"send_ts_ms": NowMs(), "ack_ts_ms": nil, "offset": nil, "error": nil, "txn": txn, "source": source}
	l.sends = append(l.sends, row)
	l.mu.Unlock()
	l.Sent.Add(1)
	return func(offset int64, errText string) {
		l.mu.Lock()
		row["ack_ts_ms"] = NowMs()
		if errText == "" {
			row["offset"] = offset
		} else {
			row["error"] = errText
			if txn != "" {
				if l.failed == nil {
					l.failed = map[string]bool{}
				}
				l.failed[txn] = true
			}
		}
		l.mu.Unlock()
		if errText == "" {
			l.Acked.Add(1)
		}
		if after != nil {
			after()
		}
	}
}

// Failed says whether a send of transaction txn has failed (its promise gave an error): an
// application that keeps its transactions whole aborts such a transaction instead of committing it.
func (l *TxnLog) Failed(txn string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed[txn]
}

// Set sets one field of a row this log holds.
func (l *TxnLog) Set(row map[string]any, key string, value any) {
	l.mu.Lock()
	row[key] = value
	l.mu.Unlock()
}

// End records a transaction's outcome as the contract names it (committed, aborted, unknown).
func (l *TxnLog) End(row map[string]any, outcome string) string {
	l.mu.Lock()
	row["end_ts_ms"], row["outcome"] = NowMs(), outcome
	l.mu.Unlock()
	return outcome
}

// Read records one record the copier read; the name its copy is written under is returned.
func (l *TxnLog) Read(row map[string]any) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	row["seq"] = len(l.reads)
	l.reads = append(l.reads, row)
	return l.Name + "-" + fmt.Sprint(len(l.sends))
}

// Reads is how many records the copier read.
func (l *TxnLog) Reads() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reads)
}

// Offset records an offset a committed transaction carried for the copier's group.
func (l *TxnLog) Offset(group, topic string, partition int32, offset int64, ts any) {
	l.mu.Lock()
	l.offsets = append(l.offsets, map[string]any{"group": group, "topic": topic, "partition": partition,
		"offset": offset, "ts_ms": ts, "phase": "live"})
	l.mu.Unlock()
}

// Write writes the log as JSON lines.
func (l *TxnLog) Write(path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rows []any
	for _, kind := range []struct {
		name string
		rows []map[string]any
	}{{"send", l.sends}, {"txn", l.txns}, {"read", l.reads}, {"offset", l.offsets}} {
		for _, row := range kind.rows {
			rows = append(rows, map[string]any{kind.name: row})
		}
	}
	return writeLines(path, len(rows), func(i int) any { return rows[i] })
}

// Spread is n records as runs for consecutive partitions: equal runs, the remainder one by one.
func Spread(n int, parts int32) []int {
	if n < int(parts) {
		ones := make([]int, n)
		for i := range ones {
			ones[i] = 1
		}
		return ones
	}
	runs := make([]int, parts)
	for i := range runs {
		runs[i] = n / int(parts)
		if i < n%int(parts) {
			runs[i]++
		}
	}
	return runs
}

// SeededRand is the transactional producer's draw of which transactions to abort: the run's seed
// and the producer's name, so a run repeats its aborts.
func SeededRand(seed, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(seed + ":" + name))
	return rand.New(rand.NewSource(int64(h.Sum64())))
}

// TxnInstance is a library's transactional producer as the shared loop drives it: the current
// instance of one transactional.id.
type TxnInstance interface {
	// Begin begins a transaction.
	Begin() error
	// Produce hands one record to the open transaction; done is its promise.
	Produce(topic string, partition int32, value string, done func(offset int64, errText string))
	// Finish commits or aborts the open transaction and records its outcome (committed, aborted, unknown).
	Finish(log *TxnLog, row map[string]any, abort bool) string
	// BeginFailed ends a transaction whose Begin failed, as the library would have it ended.
	BeginFailed(log *TxnLog, row map[string]any)
	// Replace drops the instance without ending its transaction and makes a new one with the same
	// transactional.id, initialised (its InitProducerId fences the old one): the client_kill fault.
	Replace() error
	// Close closes the instance at the end.
	Close()
}

// RunTxnProducer is the transactional producer's workload, whatever its library: txn_records
// records per transaction in equal runs over the partitions at the config's rate; a seeded share of
// the transactions is aborted after their records went out (it waits up to a second for their
// promises first). A "kill" step makes the instance die mid-transaction and a new one take over.
func RunTxnProducer(cfg TxnConfig, cmds *Commands, inst TxnInstance) error {
	log := &TxnLog{Name: cfg.Name}
	rng := SeededRand(cfg.Seed, cfg.Name)
	done := make(chan struct{})
	go Progress(&log.Sent, &log.Acked, done)
	cmds.AwaitGo()
	var pending atomic.Int64
	t0, k, seq, part := time.Now(), int64(0), int64(0), int32(0)
	for !cmds.Stopping() {
		due := time.Until(t0.Add(time.Duration(float64(k*int64(cfg.TxnRecords)) / cfg.Rate * 1e9)))
		if due > 0 {
			time.Sleep(min(due, 100*time.Millisecond))
			continue
		}
		if due < -time.Second { // fell behind (paused by a fault): start again from now, no burst
			t0, k = time.Now(), 0
		}
		k++
		row := log.Begin()
		txn := row["txn"].(string)
		if err := inst.Begin(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: begin %s: %v\n", cfg.Name, txn, err)
			inst.BeginFailed(log, row)
			continue
		}
		for _, run := range Spread(cfg.TxnRecords, cfg.Partitions) {
			for i := 0; i < run; i++ {
				value := Value(cfg.Name, seq)
				pending.Add(1)
				inst.Produce(cfg.Topic, part, value, log.Send(value, cfg.Topic, part, txn, nil, func() { pending.Add(-1) }))
				seq++
			}
			part = (part + 1) % cfg.Partitions
		}
		select {
		case step := <-cmds.Steps:
			if step == "kill" { // dies mid-transaction; a new instance fences it
				log.Set(row, "end_ts_ms", NowMs())
				if err := inst.Replace(); err != nil {
					return err
				}
				continue
			}
		default:
		}
		abort := rng.Float64() < cfg.AbortRatio
		if abort {
			for deadline := time.Now().Add(time.Second); pending.Load() > 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
		}
		inst.Finish(log, row, abort)
	}
	close(done)
	inst.Close()
	if err := log.Write(cfg.History); err != nil {
		return err
	}
	Say(map[string]any{"t": "done", "sent": log.Sent.Load(), "acked": log.Acked.Load()})
	return nil
}
