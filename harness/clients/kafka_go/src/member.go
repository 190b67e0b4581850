package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	gp "kchaos/goprotocol"

	"github.com/segmentio/kafka-go"
)

// member is a consumer-group member's process on kafka-go's ConsumerGroup: each generation's
// assigned partitions are read by a partition Reader each from the offset the generation gives
// (as kafka-go's own group Reader does), a JSON line is written per record, per commit acknowledged
// or refused and per assignment change, and offsets are committed with the generation's
// CommitOffsets, one at a time in the member's order (committer): "sync" waits for it, "async"
// does not. kafka-go's ConsumerGroup has no auto-commit (the
// harness refuses "auto"). SIGTERM is a clean leave, SIGUSR1 a freeze between a record and its
// commit, SIGKILL a crash.
type member struct {
	cfg         gp.MemberConfig
	o           *options
	out         *gp.MemberOut
	signals     *gp.Signals
	mu          sync.Mutex // the fields below, shared by the partitions' goroutines
	seq         int64
	next        map[int]int64 // per partition: the offset after the last record returned, not yet committed
	uncommitted int
	lastCommit  time.Time
	readers     *gp.Readers   // the consumer column: a new name each time a partition comes back to it
	committed   chan struct{} // closed once the generation a stopping member was in has made its last commit
	queue       chan pendingCommit
	leaving     sync.Once
}

// pendingCommit is a commit handed to the member's committer: the offsets, the generation they are
// committed in, and for a commit the member waits for, the channel closed once it is answered.
type pendingCommit struct {
	gen     *kafka.Generation
	offsets map[int]int64
	done    chan struct{}
}

// committer sends the member's commits one at a time, in the order the member made them: kafka-go
// has no asynchronous commit call, and a goroutine per commit would race them to the coordinator
// (Go starts goroutines in no particular order), a reordering the program, not kafka-go, would make.
func (m *member) committer() {
	for c := range m.queue {
		err := c.gen.CommitOffsets(map[string]map[int]int64{m.cfg.Topic: c.offsets})
		ts := gp.NowMs()
		if err != nil {
			m.out.CommitFailed(errorText(err), int64(c.gen.ID), ts)
		} else {
			for p, off := range c.offsets {
				m.out.Commit(m.cfg.Topic, int32(p), off, ts)
			}
		}
		if c.done != nil {
			close(c.done)
		}
	}
}

// commit commits what was returned and not committed, in generation gen, waiting for it or not.
func (m *member) commit(gen *kafka.Generation, wait bool) {
	m.mu.Lock()
	offsets := m.next
	m.next, m.uncommitted, m.lastCommit = map[int]int64{}, 0, time.Now()
	m.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	c := pendingCommit{gen: gen, offsets: offsets}
	if wait {
		c.done = make(chan struct{})
	}
	m.queue <- c
	if wait {
		<-c.done
	}
}

func (m *member) maybeCommit(gen *kafka.Generation) {
	m.mu.Lock()
	due := m.uncommitted > 0 && (m.uncommitted >= m.cfg.EveryRecords ||
		time.Since(m.lastCommit) >= time.Duration(m.cfg.EveryMs)*time.Millisecond)
	m.mu.Unlock()
	if due {
		m.commit(gen, m.cfg.Commit == "sync")
	}
}

// consume reads one assigned partition until its generation ends.
func (m *member) consume(ctx context.Context, gen *kafka.Generation, a kafka.PartitionAssignment) {
	offset := a.Offset
	if offset < 0 { // nothing committed: where auto.offset.reset says
		offset = m.o.startOffset
	}
	r, err := partitionReader(m.o, m.cfg.Topic, a.ID, offset)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reader:", err)
		return
	}
	defer r.Close()
	for ctx.Err() == nil && !m.signals.Stopping() {
		fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		msg, err := r.FetchMessage(fctx)
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(os.Stderr, "fetch:", err)
			}
			m.maybeCommit(gen) // every_ms passes with no record too
			continue
		}
		logIfMarker(msg)
		m.mu.Lock()
		seq, reader := m.seq, m.readers.Returned(int32(msg.Partition))
		m.seq++
		m.uncommitted++
		m.next[msg.Partition] = msg.Offset + 1
		m.mu.Unlock()
		m.out.Read(m.cfg, reader, seq, msg.Topic, int32(msg.Partition), msg.Offset, string(msg.Value), gp.NowMs(),
			highWatermark(msg), int64(gen.ID))
		m.signals.FreezeIfAsked() // client_pause: the record processed and not yet committed
		m.maybeCommit(gen)        // after a freeze: the zombie's commit, sent with what it last knew
	}
}

// generation runs one generation: its assignment line, a reader per partition, and when it ends
// (a rebalance, or the member stopping) the commit of what was returned and the revoke line.
func (m *member) generation(gen *kafka.Generation) {
	assigned := gen.Assignments[m.cfg.Topic]
	ids := make([]int32, len(assigned))
	for i, a := range assigned {
		ids[i] = int32(a.ID)
	}
	m.readers.Assigned(ids)
	m.out.Rebalance("assign", ids, int64(gen.ID))
	var wg sync.WaitGroup
	for _, a := range assigned {
		wg.Add(1)
		gen.Start(func(ctx context.Context) {
			defer wg.Done()
			m.consume(ctx, gen, a)
		})
	}
	wg.Wait()
	m.commit(gen, true) // what was processed is committed before the partitions go
	m.out.Rebalance("revoke", ids, int64(gen.ID))
	if m.signals.Stopping() {
		m.leaving.Do(func() { close(m.committed) })
	}
}

func runMember(path string) error {
	cfg, err := gp.Decode[gp.MemberConfig](path)
	if err != nil {
		return err
	}
	o, err := optionsOf(cfg.Conf)
	if err != nil {
		return err
	}
	out, err := gp.OpenMemberOut(cfg.Out)
	if err != nil {
		return err
	}
	defer out.Close()
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: o.group, Brokers: o.brokers,
		Topics: []string{cfg.Topic}, GroupBalancers: o.balancers, HeartbeatInterval: o.heartbeat,
		SessionTimeout: o.session, RebalanceTimeout: o.rebalance, StartOffset: o.startOffset,
		ErrorLogger: logger("[kafka-go] ")})
	if err != nil {
		return err
	}
	m := &member{cfg: cfg, o: o, out: out, next: map[int]int64{}, lastCommit: time.Now(),
		readers: gp.NewReaders(cfg.Consumer), signals: gp.WatchSignals()}
	ctx, cancel := context.WithCancel(context.Background())
	m.committed, m.queue = make(chan struct{}), make(chan pendingCommit, 1024)
	go m.committer()
	go func() { // the group's context ends only after the last commit: it closes the coordinator's connection
		for !m.signals.Stopping() {
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case <-m.committed:
		case <-time.After(10 * time.Second): // no generation to end (the member was between two)
		}
		cancel()
	}()
	out.Started()
	var generations sync.WaitGroup
	for ctx.Err() == nil {
		gen, err := group.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "group:", err)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		generations.Add(1)
		go func() { // ends when the group rebalances (the next Next waits for it) or the member stops
			defer generations.Done()
			m.generation(gen)
		}()
	}
	generations.Wait()   // its last commit made
	return group.Close() // a clean leave
}
