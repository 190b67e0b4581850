package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnConfig is what the harness writes for a transactional producer or the copier.
type TxnConfig struct {
	Config
	TxnRecords         int               `json:"txn_records"`
	AbortRatio         float64           `json:"abort_ratio"`
	Seed               string            `json:"seed"`
	TransactionTimeout int64             `json:"transaction_timeout_ms"`
	ConsumerProperties map[string]string `json:"consumer_properties"`
	Group              string            `json:"group"`
	InputTopic         string            `json:"input_topic"`
	OutputTopic        string            `json:"output_topic"`
	OutputPartitions   int32             `json:"output_partitions"`
}

// txnLog is what one transactional client records, as the contract's rows: its sends (with their
// transaction and, for a copy, its source), its transactions, and for the copier its reads and the
// offsets its committed transactions carried. Written after the workload as JSON lines, each one
// object under its kind ({"send": {...}}, {"txn": {...}}, {"read": {...}}, {"offset": {...}}).
type txnLog struct {
	name    string
	mu      sync.Mutex
	sends   []map[string]any
	txns    []map[string]any
	reads   []map[string]any
	offsets []map[string]any
	sent    atomic.Int64
	acked   atomic.Int64
}

func (l *txnLog) begin() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := map[string]any{"txn": fmt.Sprintf("%s:%d", l.name, len(l.txns)), "producer": l.name, "outcome": "unknown",
		"begin_ts_ms": nowMs(), "commit_ts_ms": nil, "end_ts_ms": nil}
	l.txns = append(l.txns, row)
	return row
}

// send records a send about to be handed to the client; the promise it returns completes the row.
func (l *txnLog) send(value, topic string, partition int32, txn string, source any, after func()) func(*kgo.Record, error) {
	l.mu.Lock()
	row := map[string]any{"value": value, "seq": len(l.sends), "topic": topic, "partition": partition,
		"send_ts_ms": nowMs(), "ack_ts_ms": nil, "offset": nil, "error": nil, "txn": txn, "source": source}
	l.sends = append(l.sends, row)
	l.mu.Unlock()
	l.sent.Add(1)
	return func(r *kgo.Record, err error) {
		l.mu.Lock()
		row["ack_ts_ms"] = nowMs()
		if err == nil {
			row["offset"] = r.Offset
		} else {
			row["error"] = errorText(err)
		}
		l.mu.Unlock()
		if err == nil {
			l.acked.Add(1)
		}
		if after != nil {
			after()
		}
	}
}

func (l *txnLog) set(row map[string]any, key string, value any) {
	l.mu.Lock()
	row[key] = value
	l.mu.Unlock()
}

func (l *txnLog) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, kind := range []struct {
		name string
		rows []map[string]any
	}{{"send", l.sends}, {"txn", l.txns}, {"read", l.reads}, {"offset", l.offsets}} {
		for _, row := range kind.rows {
			b, err := json.Marshal(map[string]any{kind.name: row})
			if err != nil {
				return err
			}
			w.Write(append(b, '\n'))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// txnClient is one transactional.id across the client instances that hold it: a commit that fails
// with a retriable error is tried again (up to the transaction timeout), any other failure aborts,
// and an abort that fails leaves the outcome unknown and a new instance takes over (its
// InitProducerId fences the old one). retire is a client_kill: the instance dropped without ending
// its transaction.
type txnClient struct {
	name    string
	opts    []kgo.Opt
	timeout time.Duration
	cl      *kgo.Client
}

func (c *txnClient) fresh() error {
	c.retire()
	cl, err := kgo.NewClient(c.opts...)
	if err != nil {
		return err
	}
	c.cl = cl
	return nil
}

// retire drops the instance: its connections closed, its open transaction left to the next
// instance's fencing.
func (c *txnClient) retire() {
	if c.cl != nil {
		old := c.cl
		c.cl = nil
		go old.Close()
	}
}

// finish commits or aborts the open transaction and returns the outcome as the contract names it.
func (c *txnClient) finish(log *txnLog, row map[string]any, abort bool) string {
	deadline := time.Now().Add(c.timeout)
	if !abort {
		log.set(row, "commit_ts_ms", nowMs())
	}
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var err error
		if abort {
			if err = c.cl.AbortBufferedRecords(ctx); err == nil {
				err = c.cl.EndTransaction(ctx, kgo.TryAbort)
			}
		} else if err = c.cl.Flush(ctx); err == nil {
			err = c.cl.EndTransaction(ctx, kgo.TryCommit)
		}
		cancel()
		switch {
		case err == nil:
			return c.end(log, row, map[bool]string{true: "aborted", false: "committed"}[abort])
		case !abort && kerr.IsRetriable(err) && time.Now().Before(deadline):
			continue
		case !abort && !errors.Is(err, context.DeadlineExceeded):
			abort = true
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: transaction %v outcome unknown (%v); new instance\n", c.name, row["txn"], err)
		c.end(log, row, "unknown")
		if err := c.fresh(); err != nil {
			fmt.Fprintln(os.Stderr, c.name+": a new instance:", err)
		}
		return "unknown"
	}
}

func (c *txnClient) end(log *txnLog, row map[string]any, outcome string) string {
	log.mu.Lock()
	row["end_ts_ms"], row["outcome"] = nowMs(), outcome
	log.mu.Unlock()
	return outcome
}

// spread is n records as runs for consecutive partitions: equal runs, the remainder one by one.
func spread(n int, parts int32) []int {
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

func txnOptions(cfg TxnConfig, props map[string]string) ([]kgo.Opt, error) {
	rest := map[string]string{}
	var txnID string
	for k, v := range props {
		switch k {
		case "transactional.id":
			txnID = v
		case "transaction.timeout.ms", "max.block.ms":
		default:
			rest[k] = v
		}
	}
	opts, err := clientOptions(rest)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(time.Duration(cfg.TransactionTimeout)*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithLogger(stderrLogger())), nil
}

// runTxnProducer writes txn_records records per transaction in equal runs over the partitions at
// the config's rate; a seeded share of the transactions is aborted after their records went out
// (it waits up to a second for their promises first). "kill" makes the instance die mid-transaction
// and a new one take over: the client_kill fault.
func runTxnProducer(path string) error {
	cfg, err := decode[TxnConfig](path)
	if err != nil {
		return err
	}
	opts, err := txnOptions(cfg, cfg.Properties)
	if err != nil {
		return err
	}
	log := &txnLog{name: cfg.Name}
	c := &txnClient{name: cfg.Name, opts: opts, timeout: time.Duration(cfg.TransactionTimeout) * time.Millisecond}
	if err := c.fresh(); err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.Seed + ":" + cfg.Name))
	rng := rand.New(rand.NewSource(int64(h.Sum64())))
	cmds := readCommands()
	done := make(chan struct{})
	go progress(&log.sent, &log.acked, done)
	if err := initTransactions(c); err != nil {
		return err
	}
	cmds.awaitGo()
	var pending atomic.Int64
	t0, k, seq, part := time.Now(), int64(0), int64(0), int32(0)
	for !cmds.stopping() {
		due := t0.Add(time.Duration(float64(k*int64(cfg.TxnRecords)) / cfg.Rate * 1e9)).Sub(time.Now())
		if due > 0 {
			time.Sleep(min(due, 100*time.Millisecond))
			continue
		}
		if due < -time.Second { // fell behind (paused by a fault): start again from now, no burst
			t0, k = time.Now(), 0
		}
		k++
		row := log.begin()
		txn := row["txn"].(string)
		if err := c.cl.BeginTransaction(); err != nil {
			c.finish(log, row, true)
			continue
		}
		for _, run := range spread(cfg.TxnRecords, cfg.Partitions) {
			for i := 0; i < run; i++ {
				value := cfg.Name + "-" + strconv.FormatInt(seq, 10)
				pending.Add(1)
				c.cl.Produce(context.Background(), &kgo.Record{Topic: cfg.Topic, Partition: part, Value: []byte(value)},
					log.send(value, cfg.Topic, part, txn, nil, func() { pending.Add(-1) }))
				seq++
			}
			part = (part + 1) % cfg.Partitions
		}
		select {
		case step := <-cmds.Steps:
			if step == "kill" { // dies mid-transaction; a new instance fences it
				log.set(row, "end_ts_ms", nowMs())
				if err := c.fresh(); err != nil {
					return err
				}
				if err := initTransactions(c); err != nil {
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
		c.finish(log, row, abort)
	}
	close(done)
	c.cl.Close()
	if err := log.write(cfg.History); err != nil {
		return err
	}
	say(map[string]any{"t": "done", "sent": log.sent.Load(), "acked": log.acked.Load()})
	return nil
}

// initTransactions gets the instance its producer id (fencing any earlier instance of the id) before
// the workload: the first InitProducerId on a cluster waits for the transaction log to exist.
func initTransactions(c *txnClient) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := c.cl.ProducerID(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runCopier reads the input topic (read_committed, in the config's group), writes one copy of each
// record to the output topic (the same partition number modulo the output's partitions) and commits
// the group's offsets in the same transaction: franz-go's GroupTransactSession, which after an
// abort goes back to the committed offsets. The reads after an abort go on under a new reader name.
func runCopier(path string) error {
	cfg, err := decode[TxnConfig](path)
	if err != nil {
		return err
	}
	popts, err := txnOptions(cfg, cfg.Properties)
	if err != nil {
		return err
	}
	consumer := map[string]string{}
	for k, v := range cfg.ConsumerProperties {
		if k != "bootstrap.servers" && k != "enable.auto.commit" && k != "max.poll.records" {
			consumer[k] = v
		}
	}
	copts, err := clientOptions(consumer)
	if err != nil {
		return err
	}
	log := &txnLog{name: cfg.Name}
	var generation atomic.Int64
	maxPoll, _ := strconv.Atoi(cfg.ConsumerProperties["max.poll.records"])
	opts := append(append(popts, copts...), kgo.ConsumeTopics(cfg.InputTopic),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { generation.Add(1) }),
		kgo.RequireStableFetchOffsets())
	newSession := func() (*kgo.GroupTransactSession, error) { return kgo.NewGroupTransactSession(opts...) }
	s, err := newSession()
	if err != nil {
		return err
	}
	cmds := readCommands()
	cmds.awaitGo()
	instance, rewinds := 1, 0
	for !cmds.stopping() {
		select {
		case step := <-cmds.Steps:
			if step == "kill" { // the member and its producer die mid-transaction; new ones take over
				go s.CloseAllowingRebalance()
				if s, err = newSession(); err != nil {
					return err
				}
				instance++
			}
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := s.PollRecords(ctx, max(maxPoll, 1))
		cancel()
		if fetches.NumRecords() == 0 {
			s.AllowRebalance()
			continue
		}
		reader := fmt.Sprintf("%s-in%d", cfg.Name, instance)
		if rewinds > 0 {
			reader += "." + strconv.Itoa(rewinds+1)
		}
		if !copyBatch(s, cfg, log, fetches, reader, generation.Load()) {
			rewinds++
		}
	}
	s.CloseAllowingRebalance()
	if err := log.write(cfg.History); err != nil {
		return err
	}
	say(map[string]any{"t": "done", "sent": log.sent.Load(), "read": len(log.reads)})
	return nil
}

// copyBatch copies one poll's records in one transaction with the group's offsets; whether it committed.
func copyBatch(s *kgo.GroupTransactSession, cfg TxnConfig, log *txnLog, fetches kgo.Fetches, reader string,
	generation int64) bool {
	row := log.begin()
	txn := row["txn"].(string)
	if err := s.Begin(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: begin %s: %v\n", cfg.Name, txn, err)
		return false
	}
	ts := nowMs()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		hw := highWatermark(p.FetchPartition, true)
		for _, r := range p.Records {
			log.mu.Lock()
			log.reads = append(log.reads, map[string]any{"consumer": reader, "seq": len(log.reads), "topic": r.Topic,
				"partition": r.Partition, "offset": r.Offset, "value": string(r.Value), "poll_ts_ms": ts, "hw": hw,
				"phase": "live", "isolation": "read_committed", "group": cfg.Group, "generation": generation})
			copied := cfg.Name + "-" + strconv.Itoa(len(log.sends))
			log.mu.Unlock()
			part := r.Partition % cfg.OutputPartitions
			s.Produce(context.Background(), &kgo.Record{Topic: cfg.OutputTopic, Partition: part, Value: []byte(copied)},
				log.send(copied, cfg.OutputTopic, part, txn, string(r.Value), nil))
		}
	})
	var sent *kmsg.TxnOffsetCommitRequest
	ctx := kgo.PreTxnCommitFnContext(context.Background(), func(req *kmsg.TxnOffsetCommitRequest) error {
		sent = req
		return nil
	})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.TransactionTimeout)*time.Millisecond)
	defer cancel()
	log.set(row, "commit_ts_ms", nowMs())
	committed, err := s.End(ctx, kgo.TryCommit)
	outcome := "aborted"
	switch {
	case err != nil:
		outcome = "unknown"
		fmt.Fprintf(os.Stderr, "%s: transaction %s outcome unknown: %v\n", cfg.Name, txn, err)
	case committed:
		outcome = "committed"
	}
	log.mu.Lock()
	row["end_ts_ms"], row["outcome"] = nowMs(), outcome
	if committed && sent != nil {
		for _, t := range sent.Topics {
			for _, p := range t.Partitions {
				log.offsets = append(log.offsets, map[string]any{"group": cfg.Group, "topic": t.Topic,
					"partition": p.Partition, "offset": p.Offset, "ts_ms": row["end_ts_ms"], "phase": "live"})
			}
		}
	}
	log.mu.Unlock()
	return committed
}
