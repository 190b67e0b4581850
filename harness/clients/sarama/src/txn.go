package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

// txnClient is one transactional.id across the producer instances that hold it: a commit that
// fails is aborted when sarama says the error is abortable, an abort or commit that fails otherwise
// leaves the outcome unknown and a new instance takes over (its InitProducerId fences the old one).
// retire is a client_kill: the instance dropped without ending its transaction.
type txnClient struct {
	name  string
	props map[string]string
	p     sarama.AsyncProducer
}

// fresh drops the current instance and makes a new one, retrying while the transaction
// coordinator is not there yet (the first InitProducerId on a cluster waits for its log).
func (c *txnClient) fresh() error {
	c.retire()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cl, err := newClient(c.props, "")
		if err == nil {
			var p sarama.AsyncProducer
			if p, err = sarama.NewAsyncProducerFromClient(cl); err == nil {
				c.p = p
				go c.promises(p)
				return nil
			}
			cl.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// promises completes each send's row as sarama returns it.
func (c *txnClient) promises(p sarama.AsyncProducer) {
	eachPromise(p, func(m *sarama.ProducerMessage, offset int64, errText string) {
		m.Metadata.(func(int64, string))(offset, errText)
	})
}

// retire drops the instance: its connections closed, its open transaction left to the next
// instance's fencing.
func (c *txnClient) retire() {
	if c.p != nil {
		old := c.p
		c.p = nil
		go old.AsyncClose()
	}
}

// Finish commits or aborts the open transaction and returns the outcome as the contract names it.
func (c *txnClient) Finish(log *gp.TxnLog, row map[string]any, abort bool) string {
	if !abort {
		log.Set(row, "commit_ts_ms", gp.NowMs())
		err := c.p.CommitTxn()
		if err == nil {
			return log.End(row, "committed")
		}
		fmt.Fprintf(os.Stderr, "%s: commit of %v: %v\n", c.name, row["txn"], err)
		if c.p.TxnStatus()&sarama.ProducerTxnFlagAbortableError == 0 {
			return c.unknown(log, row)
		}
	}
	if err := c.p.AbortTxn(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: abort of %v: %v\n", c.name, row["txn"], err)
		return c.unknown(log, row)
	}
	return log.End(row, "aborted")
}

func (c *txnClient) unknown(log *gp.TxnLog, row map[string]any) string {
	log.End(row, "unknown")
	if err := c.fresh(); err != nil {
		fmt.Fprintln(os.Stderr, c.name+": a new instance:", err)
	}
	return "unknown"
}

// Begin, Produce, Finish, BeginFailed, Replace and Close make txnClient the shared loop's
// instance (gp.RunTxnProducer).
func (c *txnClient) Begin() error { return c.p.BeginTxn() }

func (c *txnClient) Produce(topic string, partition int32, value string, done func(int64, string)) {
	c.p.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(value),
		Metadata: done}
}

func (c *txnClient) BeginFailed(log *gp.TxnLog, row map[string]any) { c.unknown(log, row) }

func (c *txnClient) Replace() error { return c.fresh() }

func (c *txnClient) Close() { c.retire() }

// runTxnProducer is the shared transactional workload on a sarama producer.
func runTxnProducer(path string) error {
	cfg, err := gp.Decode[gp.TxnConfig](path)
	if err != nil {
		return err
	}
	c := &txnClient{name: cfg.Name, props: cfg.Properties}
	cmds := gp.ReadCommands()
	if err := c.fresh(); err != nil {
		return err
	}
	return gp.RunTxnProducer(cfg, cmds, c)
}

// copier is consume-transform-produce with exactly-once semantics: sarama's consumer group
// (read_committed) and a transactional producer; each batch a claim returns is copied in one
// transaction that carries the group's offsets (AddOffsetsToTxn). After an abort the claim returns,
// so that the next session reads again from the committed offsets, under a new reader name.
type copier struct {
	cfg        gp.TxnConfig
	log        *gp.TxnLog
	txn        *txnClient
	mu         sync.Mutex // one transaction at a time over the claims
	maxBatch   int
	instance   int
	rewinds    int
	kill       chan struct{}
	stopping   func() bool
	killed     atomic.Bool
	generation atomic.Int64
}

func (c *copier) Setup(s sarama.ConsumerGroupSession) error {
	c.generation.Store(int64(s.GenerationID()))
	return nil
}

func (c *copier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *copier) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for !c.stopping() && s.Context().Err() == nil && !c.killed.Load() {
		batch := take(claim.Messages(), c.maxBatch, 200*time.Millisecond)
		if len(batch) == 0 {
			continue
		}
		if !c.copyBatch(batch, claim.HighWaterMarkOffset()) {
			return errors.New("transaction not committed: read again from the committed offsets")
		}
	}
	return nil
}

// copyBatch copies one claim's batch in one transaction with the group's offset; whether it committed.
func (c *copier) copyBatch(batch []*sarama.ConsumerMessage, hw int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	reader := fmt.Sprintf("%s-in%d", c.cfg.Name, c.instance)
	if c.rewinds > 0 {
		reader += fmt.Sprintf(".%d", c.rewinds+1)
	}
	row := c.log.Begin()
	txn := row["txn"].(string)
	if err := c.txn.p.BeginTxn(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: begin %s: %v\n", c.cfg.Name, txn, err)
		c.txn.unknown(c.log, row)
		c.rewinds++
		return false
	}
	ts := gp.NowMs()
	last := batch[len(batch)-1]
	for _, m := range batch {
		copied := c.log.Read(map[string]any{"consumer": reader, "topic": m.Topic, "partition": m.Partition,
			"offset": m.Offset, "value": string(m.Value), "poll_ts_ms": ts, "hw": highWatermark(hw), "phase": "live",
			"isolation": "read_committed", "group": c.cfg.Group, "generation": c.generation.Load()})
		part := m.Partition % c.cfg.OutputPartitions
		c.txn.p.Input() <- &sarama.ProducerMessage{Topic: c.cfg.OutputTopic, Partition: part,
			Value: sarama.StringEncoder(copied), Metadata: c.log.Send(copied, c.cfg.OutputTopic, part, txn, string(m.Value), nil)}
	}
	offsets := map[string][]*sarama.PartitionOffsetMetadata{last.Topic: {{Partition: last.Partition, Offset: last.Offset + 1,
		LeaderEpoch: -1}}}
	abort := false
	if err := c.txn.p.AddOffsetsToTxn(offsets, c.cfg.Group); err != nil { // copies without their offsets: aborted
		fmt.Fprintf(os.Stderr, "%s: offsets of %s: %v\n", c.cfg.Name, txn, err)
		abort = true
	}
	outcome := c.txn.Finish(c.log, row, abort)
	if outcome == "committed" {
		c.log.Offset(c.cfg.Group, last.Topic, last.Partition, last.Offset+1, row["end_ts_ms"])
		return true
	}
	c.rewinds++
	return false
}

func runCopier(path string) error {
	cfg, err := gp.Decode[gp.TxnConfig](path)
	if err != nil {
		return err
	}
	log := &gp.TxnLog{Name: cfg.Name}
	tc := &txnClient{name: cfg.Name, props: cfg.Properties}
	if err := tc.fresh(); err != nil {
		return err
	}
	props := map[string]string{"bootstrap.servers": cfg.Properties["bootstrap.servers"]}
	for k, v := range cfg.ConsumerProperties {
		props[k] = v
	}
	props["enable.auto.commit"] = "false"
	var maxBatch int
	fmt.Sscan(cfg.ConsumerProperties["max.poll.records"], &maxBatch)
	cmds := gp.ReadCommands()
	c := &copier{cfg: cfg, log: log, txn: tc, maxBatch: max(maxBatch, 1), instance: 1, stopping: cmds.Stopping}
	newGroup := func() (sarama.ConsumerGroup, error) {
		cl, err := newClient(props, cfg.InputTopic)
		if err != nil {
			return nil, err
		}
		return sarama.NewConsumerGroupFromClient(cfg.Group, cl)
	}
	group, err := newGroup()
	if err != nil {
		return err
	}
	cmds.AwaitGo()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-cmds.Stop
		cancel()
	}()
	go func() {
		for step := range cmds.Steps {
			if step == "kill" {
				c.killed.Store(true)
			}
		}
	}()
	for ctx.Err() == nil {
		err := group.Consume(ctx, []string{cfg.InputTopic}, c)
		if c.killed.Swap(false) { // the member and its producer die mid-transaction; new ones take over
			c.mu.Lock()
			go group.Close()
			if group, err = newGroup(); err != nil {
				return err
			}
			if err := tc.fresh(); err != nil {
				return err
			}
			c.instance++
			c.mu.Unlock()
		} else if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "copier:", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	group.Close()
	tc.retire()
	if err := log.Write(cfg.History); err != nil {
		return err
	}
	gp.Say(map[string]any{"t": "done", "sent": log.Sent.Load(), "read": log.Reads()})
	return nil
}
