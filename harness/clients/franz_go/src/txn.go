package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// promise is a TxnLog send's completion as franz-go's produce promise.
func promise(done func(offset int64, errText string)) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		if err != nil {
			done(-1, errorText(err))
		} else {
			done(r.Offset, "")
		}
	}
}

// txnClient is one transactional.id across the client instances that hold it: a transaction a send
// of which failed is aborted rather than committed; a commit that fails
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

// Finish commits or aborts the open transaction and returns the outcome as the contract names it.
func (c *txnClient) Finish(log *gp.TxnLog, row map[string]any, abort bool) string {
	deadline := time.Now().Add(c.timeout)
	if !abort {
		log.Set(row, "commit_ts_ms", gp.NowMs())
	}
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var err error
		if abort {
			if err = c.cl.AbortBufferedRecords(ctx); err == nil {
				err = c.cl.EndTransaction(ctx, kgo.TryAbort)
			}
		} else if err = c.cl.Flush(ctx); err == nil {
			if log.Failed(fmt.Sprint(row["txn"])) {
				// franz-go commits whatever succeeded when asked to (its documented divergence from
				// Java, whose commit refuses a transaction with a failed send): an application that
				// keeps its transactions whole aborts one whose send failed.
				cancel()
				abort = true
				continue
			}
			err = c.cl.EndTransaction(ctx, kgo.TryCommit)
		}
		cancel()
		switch {
		case err == nil:
			return log.End(row, map[bool]string{true: "aborted", false: "committed"}[abort])
		case !abort && kerr.IsRetriable(err) && time.Now().Before(deadline):
			continue
		case !abort && !errors.Is(err, context.DeadlineExceeded):
			abort = true
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: transaction %v outcome unknown (%v); new instance\n", c.name, row["txn"], err)
		log.End(row, "unknown")
		if err := c.fresh(); err != nil {
			fmt.Fprintln(os.Stderr, c.name+": a new instance:", err)
		}
		return "unknown"
	}
}

func txnOptions(cfg gp.TxnConfig, props map[string]string) ([]kgo.Opt, error) {
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

// Begin, Produce, Finish, BeginFailed, Replace and Close make txnClient the shared loop's
// instance (gp.RunTxnProducer).
func (c *txnClient) Begin() error { return c.cl.BeginTransaction() }

func (c *txnClient) Produce(topic string, partition int32, value string, done func(int64, string)) {
	c.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}, promise(done))
}

func (c *txnClient) BeginFailed(log *gp.TxnLog, row map[string]any) { c.Finish(log, row, true) }

func (c *txnClient) Replace() error {
	if err := c.fresh(); err != nil {
		return err
	}
	return initTransactions(c)
}

func (c *txnClient) Close() { c.cl.Close() }

// runTxnProducer is the shared transactional workload on a franz-go client.
func runTxnProducer(path string) error {
	cfg, err := gp.Decode[gp.TxnConfig](path)
	if err != nil {
		return err
	}
	opts, err := txnOptions(cfg, cfg.Properties)
	if err != nil {
		return err
	}
	c := &txnClient{name: cfg.Name, opts: opts, timeout: time.Duration(cfg.TransactionTimeout) * time.Millisecond}
	cmds := gp.ReadCommands()
	if err := c.Replace(); err != nil {
		return err
	}
	return gp.RunTxnProducer(cfg, cmds, c)
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
	cfg, err := gp.Decode[gp.TxnConfig](path)
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
	log := &gp.TxnLog{Name: cfg.Name}
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
	cmds := gp.ReadCommands()
	cmds.AwaitGo()
	instance, rewinds := 1, 0
	for !cmds.Stopping() {
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
	if err := log.Write(cfg.History); err != nil {
		return err
	}
	gp.Say(map[string]any{"t": "done", "sent": log.Sent.Load(), "read": log.Reads()})
	return nil
}

// copyBatch copies one poll's records in one transaction with the group's offsets; whether it committed.
func copyBatch(s *kgo.GroupTransactSession, cfg gp.TxnConfig, log *gp.TxnLog, fetches kgo.Fetches, reader string,
	generation int64) bool {
	row := log.Begin()
	txn := row["txn"].(string)
	if err := s.Begin(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: begin %s: %v\n", cfg.Name, txn, err)
		return false
	}
	ts := gp.NowMs()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		hw := highWatermark(p.FetchPartition, true)
		for _, r := range p.Records {
			copied := log.Read(map[string]any{"consumer": reader, "topic": r.Topic,
				"partition": r.Partition, "offset": r.Offset, "value": string(r.Value), "poll_ts_ms": ts, "hw": hw,
				"phase": "live", "isolation": "read_committed", "group": cfg.Group, "generation": generation})
			part := r.Partition % cfg.OutputPartitions
			s.Produce(context.Background(), &kgo.Record{Topic: cfg.OutputTopic, Partition: part, Value: []byte(copied)},
				promise(log.Send(copied, cfg.OutputTopic, part, txn, string(r.Value), nil)))
		}
	})
	var sent *kmsg.TxnOffsetCommitRequest
	ctx := kgo.PreTxnCommitFnContext(context.Background(), func(req *kmsg.TxnOffsetCommitRequest) error {
		sent = req
		return nil
	})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.TransactionTimeout)*time.Millisecond)
	defer cancel()
	log.Set(row, "commit_ts_ms", gp.NowMs())
	committed, err := s.End(ctx, kgo.TryCommit)
	outcome := "aborted"
	switch {
	case err != nil:
		outcome = "unknown"
		fmt.Fprintf(os.Stderr, "%s: transaction %s outcome unknown: %v\n", cfg.Name, txn, err)
	case committed:
		outcome = "committed"
	}
	log.End(row, outcome)
	if committed && sent != nil {
		for _, t := range sent.Topics {
			for _, p := range t.Partitions {
				log.Offset(cfg.Group, t.Topic, p.Partition, p.Offset, row["end_ts_ms"])
			}
		}
	}
	return committed
}
